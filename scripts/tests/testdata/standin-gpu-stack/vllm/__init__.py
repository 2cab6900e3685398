"""Stand-in vllm (see ../README.md): not the real package."""
import os

__version__ = "0.27.1.standin"


class SamplingParams:
    def __init__(self, max_tokens=16, temperature=1.0):
        self.max_tokens = max_tokens


class _Completion:
    def __init__(self, n):
        self.token_ids = list(range(n))
        self.text = " Paris." if n else ""


class _Output:
    def __init__(self, n):
        self.outputs = [_Completion(n)]


class LLM:
    def __init__(self, model, **kwargs):
        if not os.path.isdir(model):
            raise OSError(f"stand-in LLM: no model directory {model}")

    def generate(self, prompts, params):
        n = int(os.environ.get("STANDIN_VLLM_TOKENS", str(params.max_tokens)))
        return [_Output(n) for _ in prompts]
