#!/usr/bin/env python3
"""Writes the expected outputs the Go tests compare against, byte for byte,
by rendering with Python's jinja2 configured exactly as transformers
configures it (transformers/utils/chat_template_utils.py:
_compile_jinja_template and render_jinja_template):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
      extensions=[AssistantTracker, jinja2.ext.loopcontrols])
  filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=indent,
      separators=separators, sort_keys=sort_keys)
  globals: raise_exception, strftime_now
  render(messages=..., tools=None or [...], documents=None,
         add_generation_prompt=..., **special_tokens, **template_kwargs)

strftime_now uses a fixed time (FIXED_NOW) so outputs are stable; the Go
tests pass the same time.

Outputs:
  expected.json                        (cases.json: real chat templates)
  ../jinja/testdata/snippets_expected.json  (language cases)

usage: python3 render_ref.py   (jinja2 3.1.x)
"""
import datetime
import json
import os

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = datetime.datetime(2024, 7, 26, 14, 5, 9)


class AssistantTracker(Extension):
    # transformers' AssistantTracker without the index tracking, which only
    # matters for return_assistant_tokens_mask: {% generation %} renders its
    # body as a call block.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return FIXED_NOW.strftime(format)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now


def render(src, **kw):
    try:
        return env.from_string(src).render(**kw)
    except Exception as e:  # the Go side must fail too; the message is informative only
        return {"error": f"{type(e).__name__}: {e}"}


def chat_cases():
    spec = json.load(open(os.path.join(HERE, "cases.json")))
    out = {}
    for name, c in spec["cases"].items():
        src = open(os.path.join(HERE, c["template"])).read() if "template" in c else c["source"]
        conv = spec["conversations"][c["conversation"]] if "conversation" in c else {"messages": c["messages"]}
        kw = dict(
            messages=conv["messages"],
            tools=conv.get("tools"),
            documents=None,
            add_generation_prompt=c.get("add_generation_prompt", False),
            bos_token=c.get("bos_token", ""),
            eos_token=c.get("eos_token", ""),
        )
        kw.update(conv.get("vars", {}))
        kw.update(c.get("vars", {}))
        out[name] = render(src, **kw)
    for path, t in spec["templates"].items():
        src = open(os.path.join(HERE, path)).read()
        for conv_name in t["conversations"]:
            conv = spec["conversations"][conv_name]
            for agp in (False, True):
                kw = dict(
                    messages=conv["messages"],
                    tools=conv.get("tools"),
                    documents=None,
                    add_generation_prompt=agp,
                    bos_token=t.get("bos_token", ""),
                    eos_token=t.get("eos_token", ""),
                )
                kw.update(conv.get("vars", {}))
                kw.update(t.get("vars", {}))
                out[f"{path}/{conv_name}/agp={str(agp).lower()}"] = render(src, **kw)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    return len(out)


def snippet_cases():
    path = os.path.join(HERE, "..", "jinja", "testdata", "snippets.txt")
    cases, name, lines, data = {}, None, [], None
    def flush():
        if name is not None:
            cases[name] = ("\n".join(lines), data)
    for line in open(path).read().split("\n"):
        if line.startswith("=== "):
            flush()
            name, lines, data = line[4:], [], None
        elif line.startswith("--- data"):
            data = ""
        elif name is None:
            continue
        elif data is not None:
            data += line
        else:
            lines.append(line)
    flush()
    out = {}
    for name, (src, data) in cases.items():
        out[name] = render(src, **(json.loads(data) if data else {}))
    with open(os.path.join(HERE, "..", "jinja", "testdata", "snippets_expected.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    return len(out)


if __name__ == "__main__":
    print("chat cases:", chat_cases())
    print("snippets:", snippet_cases())
