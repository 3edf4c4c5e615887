package diagnose

// Activity while work is in flight (issue 40). Engines differ in which counters move while a
// request is being served: vLLM counts generated tokens on every step, llama.cpp only when a
// request finishes (tokens_predicted_total) or gets its first token (prompt_tokens_total), so
// a window shorter than a request reads no token at all while the server is busy. Its
// n_decode_total (DecodeSteps) moves on every decode step; Progress includes it where the
// engine exports it, so the stall and frozen-gauge verdicts need every activity counter still.

// decodeNote names decode steps in the progress evidence where the target exports them.
func decodeNote(c *tctx) string {
	if _, ok := c.in.Values[DecodeSteps]; ok {
		return " + decode steps"
	}
	return ""
}
