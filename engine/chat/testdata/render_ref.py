#!/usr/bin/env python3
"""Renders the conversations of chat_test.go with Python's jinja2 configured
as transformers configures it (trim_blocks, lstrip_blocks), producing the
expected outputs in this directory. usage: python3 render_ref.py"""
import json, jinja2

def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)

env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = raise_exception
cases = json.load(open("cases.json"))
out = {}
for name, c in cases.items():
    t = env.from_string(open(c["template"]).read())
    out[name] = t.render(messages=c["messages"], add_generation_prompt=c["add_generation_prompt"],
                         bos_token=c.get("bos_token", ""), eos_token=c.get("eos_token", ""))
json.dump(out, open("expected.json", "w"), indent=1, ensure_ascii=False)
