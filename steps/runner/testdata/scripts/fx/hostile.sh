#!/usr/bin/env bash
# Prints what a terminal must never get from a build log: clipboard and
# title sequences, a hyperlink, cursor moves, bells, NUL bytes, invalid UTF-8.
set -Eeuo pipefail
printf 'clip\033]52;c;cm0gLXJmIH4vCg==\007board\n'
printf '\033]0;owned title\033\\title\n'
printf '\033]8;;https://example.invalid\033\\link\033]8;;\033\\\n'
printf 'up\033[2A\033[2Jclear\n'
printf 'bell\007\007\n'
printf 'nul\000\000bytes\n'
printf 'bad\377\376utf8\n'
printf '10%%\r50%%\r100%%\n'
