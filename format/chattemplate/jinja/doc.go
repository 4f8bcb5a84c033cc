// Package jinja is a small, sandboxed interpreter for the subset of Jinja2
// that Hugging Face chat templates use. It renders the way transformers
// renders them: jinja2's ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks, the loopcontrols extension, {% generation %} blocks and a
// tojson filter that is json.dumps(ensure_ascii=False).
//
// Templates are hostile input (any model on the Hub ships one), so the
// interpreter has no loader at all ({% include %}, {% import %},
// {% from %} and {% extends %} fail at parse time), reaches nothing but the
// values it is given, and bounds everything a template can spend: parser
// nesting, a step budget, a render deadline, macro call depth, the size of
// every string or list before it is allocated, the bytes allocated in all,
// and the output. See Limits.
//
// Values are Go values with Python semantics: nil (None), bool, int64 (int),
// float64 (float), string (str), List, Tuple, *Dict (insertion-ordered, like
// a Python dict), Range, *Namespace, Undefined, and callables. ValueOf and
// FromJSON convert host data; FromJSON keeps object key order and the
// int/float distinction so that tojson reproduces what Python writes.
package jinja
