#!/usr/bin/python3
"""Writes tests/fixtures/jinja/cases.json: small templates with what Jinja2 3.1 renders for
them in transformers' setup (immutable sandbox, trim_blocks, lstrip_blocks, loopcontrols,
its tojson, raise_exception, strftime_now), or the error it raises. Run with Debian's
python3 (python3-jinja2)."""
import json
import sys
from datetime import datetime

from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime(2026, 7, 14, 9, 30, 0)


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise ValueError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[Generation, "jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)

V = {"messages": [{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "Hello", "reasoning_content": "think"}],
     "d": {"b": 2, "a": 1, "c": {"x": [1, 2.5, None, True]}},
     "s": "  Hello, World  ", "n": 7, "f": 2.5, "l": [3, 1, 2], "e": [], "u": "日本 🦊"}

TEMPLATES = [
    "a{# comment #}b", "  {% if true %}\n  x\n  {% endif %}\n  y", "{%- if true -%}  x  {%- endif -%}",
    "a\n  {%+ if true %}b{% endif %}", "x  {{- 1 -}}  y", "{% raw %}{{ x }}{% endraw %}",
    "line1\r\nline2\n", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}",
    "{{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.0 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 0.1 + 0.2 }} {{ 100.0 }}",
    "{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }}",
    "{{ none }} {{ true }} {{ [1, 'a', none, 2.0] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ (1, 2) }}",
    "{{ \"it's\" }} {{ ['it\\'s', 'q\"'] }} {{ 'tab\\there' }} {{ '\\u00e9\\x41' }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' in 'cat' }} {{ 2 not in l }}",
    "{{ not true }} {{ true and 0 }} {{ 0 or 'x' }} {{ none or [] }} {{ 'y' if n > 3 else 'n' }} [{{ 'y' if false }}]",
    "{{ d.a }} {{ d['b'] }} {{ d.c.x[1] }} {{ d.missing }}|{{ d.missing is defined }} {{ l[-1] }} {{ l[10] }}",
    "{{ l[1:] }} {{ l[::-1] }} {{ l[:-1] }} {{ 'hello'[1:3] }} {{ u[::-1] }} {{ l[5:1:-2] }}",
    "{% for x in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}:{{ x }} {% endfor %}",
    "{% for x in e %}x{% else %}empty{% endfor %} {% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}",
    "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor %}",
    "{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }} {{ loop.cycle('a', 'b') }}|{% endfor %}",
    "{% for a in [1, 2] %}{% for b in [3] %}{{ loop.depth }}{{ a }}{{ b }}{% endfor %}{% endfor %}",
    "{% for i in [1,2,3] %}{% if i == 1 %}{% set x = 5 %}{% endif %}[{{ x }}]{% endfor %}[{{ x }}]",
    "{% set ns = namespace(c=0, s='') %}{% for x in l %}{% set ns.c = ns.c + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.c }} {{ ns.s }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 2) %}{{ t }}",
    "{% set block %}  inner {{ n }}  {% endset %}[{{ block }}] {% set up | upper %}x{% endset %}{{ up }}",
    "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }} {{ m(1, 2, 3, 4) }} {{ m(1, c=5, z=6) }}",
    "{% macro outer() %}<{{ caller() }}>{% endmacro %}{% call outer() %}body {{ n }}{% endcall %}",
    "{% macro list_(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) list_([1, 2]) %}[{{ x }}]{% endcall %}",
    "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}",
    "{% filter upper %}abc {{ n }}{% endfilter %} {% generation %}gen {{ n }}{% endgeneration %}",
    "{% with a = 1, b = n %}{{ a + b }}{% endwith %}",
    "{{ d | tojson }} {{ d | tojson(indent=2) }} {{ d | tojson(sort_keys=true) }} {{ u | tojson }} {{ u | tojson(ensure_ascii=true) }}",
    "{{ d | tojson(separators=(',', ':')) }} {{ 'a\"b\\\\c\\n\\u0001' | tojson }} {{ [] | tojson(indent=2) }} {{ {'a': []} | tojson(indent='\\t') }}",
    "{{ s | trim }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ s | length }} {{ u | length }}",
    "{{ s.split(',') }} {{ 'a b  c'.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ s.startswith('  H') }} {{ s.endswith(('x', '  ')) }}",
    "{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }} {{ 'ab'.replace('', '-') }} {{ s | replace('o', '0') }} {{ s.upper() }} {{ s | lower }} {{ 'hello world' | title }} {{ 'hELLO' | capitalize }}",
    "{{ s.find('o') }} {{ s.rfind('o') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }}",
    "{{ 'abc'.isalpha() }} {{ 'ab1'.isalpha() }} {{ ' \\t'.isspace() }} {{ ''.isspace() }} {{ 'a1'.isalnum() }} {{ 'AB1'.isupper() }} {{ '1'.isupper() }} {{ 'ab'.islower() }} {{ 'aB'.islower() }} {{ ''.isdigit() }}",
    "{{ 'hELLO wORLD'.capitalize() }} {{ 'hello wORLD'.title() }} {{ s.index('W') }} {{ 'ab'.count('') }} {{ u.find('🦊') }} {{ u.rfind('x') }} {{ 'a b c'.rsplit(None, 1) }} {{ ' a '.split(None, 0) }} {{ ' a '.rsplit(None, 0) }} {{ ' a b '.split(None, 1) }} {{ ' a  b c '.split(None, 1) }} {{ ' a b  c '.rsplit(None, 1) }} {{ ' a b '.split(None, 5) }} {{ '   '.split(None, 0) }} {{ 'a,b'.split(sep=',') }}",
    "{{ l.index(1) }} {{ l.count(3) }} {{ l.copy() }} {{ d.copy() }} {{ d.values() | list }} {{ d.items() | list }} {{ u.upper() }} {{ 'ÄB'.lower() }}",
    "{{ 'abc'.index('z') }}",
    "{{ l | join(', ') }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ l | first }} {{ l | last }} {{ l | list }} {{ l | unique | list }} {{ l | reverse | list }}",
    "{{ d | dictsort }} {{ d | items | list }} {{ d.keys() | list }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}",
    "{{ messages | map(attribute='role') | list }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('reasoning_content') | list | length }}",
    "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ ['a', 'B'] | map('upper') | join }} {{ l | sum }} {{ l | min }} {{ l | max }}",
    "{{ x | default('dflt') }} {{ none | default('dflt') }} {{ '' | default('dflt', true) }} {{ '42' | int }} {{ 'x' | int }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 1 | string ~ 'x' }}",
    "{{ n is number }} {{ n is integer }} {{ f is float }} {{ true is boolean }} {{ s is string }} {{ d is mapping }} {{ l is iterable }} {{ d is iterable }} {{ none is none }} {{ n is odd }} {{ n is divisibleby 7 }}",
    "{{ x is defined }} {{ x is not defined }} {{ none is sameas none }} {{ false is sameas false }} {{ 1 is eq 1 }} {{ 'a' is in 'cat' }} {{ n is gt 3 }} {{ true is true }} {{ 1 is true }}",
    "{{ '%s and %d' % ('a', 3) }} {{ '%s' % 'x' }} {{ '%s-%s' | format(1, 2) }} {{ -f }} {{ f | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }}",
    "{{ 'x\\ny' | indent(2) }} {{ 'x\\ny' | indent(2, true) }} {{ '<a href=\"x\">' | e }}",
    "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ namespace(a=1).a }} {{ dict(a=1, b='x') }}",
    "{{ strftime_now('%Y-%m-%d %H:%M %a %b %d %j') }}",
    "{{ 'a' 'b' }} {{ 1_000 }} {{ [1, 2,] }} {{ {'a': 1,} }} {{ ( 3 ) }}",
    "{{ messages[0].content }}{{ messages[-1]['reasoning_content'] }}{{ messages | length }}",
    "{%- for m in messages -%}\n  {{- m.role }}: {{ m.content }}\n{% endfor -%}\n",
    "{% if n == 1 %}one{% elif n == 7 %}seven{% else %}other{% endif %}",
    "{{ x.y }}",
    "{{ raise_exception('bad input') }}",
    "{{ 'a' + 1 }}",
    "{% for %}",
    "{{ 1 +  }}",
    "{% if true %}unclosed",
    "{{ l | nosuchfilter }}",
    "{{ 1 // 0 }}",
    "{% endif %}",
]


def main():
    cases = []
    for src in TEMPLATES:
        case = {"template": src}
        try:
            case["expected"] = env.from_string(src).render(**V)
        except Exception as ex:  # the interpreter must fail too
            case["error"] = type(ex).__name__
        cases.append(case)
    out = {"vars": V, "now": NOW.isoformat(), "cases": cases}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


main()
