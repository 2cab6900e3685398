#!/usr/bin/env bash
# Asks for an answer on its terminal, FX_PROMPT deciding
# how: sudo (a sudo-like prompt, no newline, then read), silent (read -s: the
# terminal's echo off), bare (a line that asks nothing, then read).
set -Eeuo pipefail
case ${FX_PROMPT:-sudo} in
  sudo)
    printf '[sudo] password for user: '
    read -r answer
    ;;
  silent)
    read -rs -p 'Password: ' answer
    echo
    ;;
  bare)
    echo "working"
    read -r answer
    ;;
esac
echo "got ${#answer} chars"
