"""Stand-in vllm (see ../README.md): not the real package."""
import os

__version__ = "0.27.1.standin"

# What the stand-in "model" answers, by prompt (the first words): known answers any working
# model gives, fluent text elsewhere; STANDIN_VLLM_ANSWERS=bangs answers "!" to everything, as
# vLLM on ROCm did (vllm-project/vllm#37996); STANDIN_VLLM_COMPILED does the same for the
# compiled engine only (enforce_eager=False), the path a replaced triton breaks.
_ANSWERS = {
    "The capital of France": [" Paris", ".", " It", " is", " the", " capital", " of", " France"],
    "17 + 25": [" 42", "\n", "17", " +", " 26", " =", " 43", "\n"],
    "Monday": [" Friday", ",", " Saturday", ",", " and", " Sunday", ".", "\n"],
    "What is the capital of Japan": ["Tokyo", "."],
}
_FLUENT = [" there", " was", " a", " little", " girl", " named", " Lily", ".", " She", " loved", " to", " play", " in", " the", " park", "."]


class SamplingParams:
    def __init__(self, max_tokens=16, temperature=1.0, top_p=1.0, logprobs=None, seed=None):
        self.max_tokens = max_tokens
        self.logprobs = logprobs


class Logprob:
    def __init__(self, logprob, rank, decoded_token):
        self.logprob, self.rank, self.decoded_token = logprob, rank, decoded_token


class _Completion:
    def __init__(self, words, params):
        words = words[: params.max_tokens]
        self.token_ids = [_tid(w) for w in words]
        self.text = "".join(words)
        self.finish_reason = "length" if len(words) == params.max_tokens else "stop"
        self.logprobs = None
        if params.logprobs:
            self.logprobs = []
            for w in words:
                alts = [w] + [a for a in (" the", " a", ",", "\n", " of") if a != w][: params.logprobs - 1]
                self.logprobs.append({_tid(a): Logprob(-0.05 - 1.5 * i, i + 1, a) for i, a in enumerate(alts)})


def _tid(word):
    return sum(word.encode()) % 30000 + 3


class _Output:
    def __init__(self, words, params):
        self.outputs = [_Completion(words, params)]


class LLM:
    def __init__(self, model, enforce_eager=False, **kwargs):
        if not os.path.isdir(model):
            raise OSError(f"stand-in LLM: no model directory {model}")
        self.mode = "bangs" if os.environ.get("STANDIN_VLLM_ANSWERS") == "bangs" else "right"
        if not enforce_eager and os.environ.get("STANDIN_VLLM_COMPILED") == "bangs":
            self.mode = "bangs"

    def _words(self, prompt, params):
        if "STANDIN_VLLM_TOKENS" in os.environ:
            return [" x"] * int(os.environ["STANDIN_VLLM_TOKENS"])
        if self.mode == "bangs":
            return ["!"] * params.max_tokens
        for start, words in _ANSWERS.items():
            if prompt.startswith(start):
                return words
        return _FLUENT

    def generate(self, prompts, params, use_tqdm=True):
        return [_Output(self._words(p, params), params) for p in prompts]

    def chat(self, messages, params, use_tqdm=True):
        return [_Output(self._words(messages[-1]["content"], params), params)]
