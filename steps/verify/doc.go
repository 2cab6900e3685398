// Package verify checks that a running OpenAI-compatible server (llama-server,
// vLLM, Ollama) computes right, not only that it answers: `haloforge verify`, and
// the API serve and the track verify steps call after a server is ready.
//
// # What is sent
//
// A fixed, documented prompt set (Prompts, PromptSetID): four prompts with a known
// answer any working instruct model gives (a fact, a sum and a continuation through
// /v1/completions, a fact through /v1/chat/completions) and two open-ended ones
// (free text, code) whose every token is a position to compare. Every request is
// greedy (temperature 0, top_p 1), seeded (Seed), asks for the TopK most likely
// tokens at each position, does not reuse the server's prompt cache
// (llama-server's cache_prompt), is bounded in time (Options.Timeout) and its
// answer in size (Options.MaxBody). Both logprobs formats are read: the content
// list (chat; llama-server for both endpoints, with token IDs) and the legacy
// parallel lists of vLLM's /v1/completions. Everything the server sends is
// sanitised before it is shown or written (Printable; tokens as their exact bytes
// in a reference).
//
// # The checks
//
// With a reference (a Record read by ReadReference, made by --record on a trusted
// backend: the same model file on the CPU), JudgeReference compares each answer
// position by position on the reference's own tokens: at each position both
// servers were given the same text, so their distributions must agree within
// Tolerance.Logprob (distance: the largest difference of a token's logprob over
// the tokens either lists, a token one side does not list counted at least down
// to that side's least likely listed one). Where the two choose different tokens,
// the rest of the answers continue from different text and are not compared; the
// different choice is rounding only if the reference's own choice was within
// Tolerance.Tie of the server's (a near-tie), else it is a disagreement.
//
// Without a reference, JudgeKnownAnswers looks for the known answers and for
// degenerate output: one token repeated (six or more from the first token, or
// twelve in a row anywhere), a run of eight "!", a placeholder token (<unusedN>,
// Llama 3's reserved specials), an empty answer, a NaN or infinite logprob,
// all-equal distributions. Degenerate output is wrong in both checks, and is
// never recorded as a reference.
//
// Verdicts: Right; Wrong with the evidence (prompt, position, expected and got
// tokens with their logprobs, the distance); NotVerified with the reason (a model
// that misses the known answers without being degenerate, such as a
// random-weights model; a server without logprobs against a reference).
//
// # How the tolerances were derived
//
// On real servers here (scripts/tests/integration-verify.sh, Debian sid's
// llama-server, llama.cpp 0.7.0 build 11669, on its CPU backend and on its
// Vulkan backend on Mesa 26.2.6's lavapipe), with a tiny random-weights llama
// model whose logits were made sharp (its output matrix scaled by 40, q and k by
// 8), so that greedy choices are clear:
//
//   - the same GGUF on Vulkan against the CPU reference: at most 0.131 nats at any
//     position of the six prompts (the CPU against itself: exactly 0);
//   - the same GGUF with one layer's ffn_down scaled by 1.3 (same tokenizer and
//     shapes), on the CPU: every prompt off, the largest distance per prompt
//     between 0.69 and 1.39; with one attention matrix negated: 7.2 and more.
//
// Tolerance.Logprob is the geometric mean of the largest rounding distance and
// the smallest per-prompt maximum of the perturbed model, sqrt(0.131 × 0.69) =
// 0.30, rounded to one figure: 0.3. It leaves a factor of 2.3 either side: room
// for a GPU's coarser arithmetic (fp16 accumulation) than lavapipe's, and a
// margin below a different computation. Tolerance.Tie is twice that, 0.6: each of
// the two logprobs of a near-tie may move by the tolerance. The integration proof
// prints these figures on every run and fails when the tolerance no longer lies
// between them.
package verify
