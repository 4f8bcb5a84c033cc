// Package axllm is the one reader and writer of a compiled ax-llm model
// directory: what pulsar2 leaves and the vendor runtime (`axllm run|serve`,
// main_axcl_*) loads. It holds the runtime's config.json and
// post_config.json, edgectl_build.json, the file names (layers, post model,
// embedding, tokenizer sidecar), what makes a directory compiled, the
// runtime's tokenizer file (types 0 and 1), and the checks that a directory
// loads as it is.
//
// The compiler driver (pulsar2) writes through it, the vendor lane
// (engine/axcl), doctor and inspect read through it; it imports only
// format/ and internal/ packages, so the device binary does not link the
// compiler driver.
//
// Facts about the runtime come from ../shared/docs/axera.md (§5, §8).
package axllm
