// Package pulsar2 drives the Axera pulsar2 LLM compiler, which ships only as
// a Docker image: it picks llm_build or llm_build2 from the image's version,
// runs it with the model, output and a sitecustomize shim mounted, explains
// its known failures, and turns its output into a directory the ax-llm
// runtime (`axllm run|serve`) loads as it is: the raw bf16 embedding, the
// ax-llm config.json and post_config.json, and the tokenizer.
//
// It also writes the shim on its own (WriteShim), bakes it into a copy of
// the compiler image (PatchImage) and regenerates a compiled directory's
// config.json (RegenerateConfig). The directory's format (its configs,
// file names, tokenizer file, verification) is format/axllm's.
//
// Facts about the toolchain come from ../shared/docs/axera.md (§3-§8).
package pulsar2
