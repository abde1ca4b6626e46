/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_chat.c: chat templates. The vendors' templates rendered as
 * transformers renders them (tests/data/chat/template_cases.json, made by
 * tools/chat_templates_reference.py), byte for byte; hostile templates
 * refused with their line; the template and stop tokens read from a
 * model's files.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glyd_llm.h"
#include "harness.h"

#define FIXED_TIME 1767225600LL /* 2026-01-01, as the reference pinned strftime_now */

static char* slurp(const char* path, size_t* size)
{
    FILE* const f = fopen(path, "rb");
    char* d = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        d = (char*)malloc((size_t)n + 1);
        if (d && fread(d, 1, (size_t)n, f) != (size_t)n) { free(d); d = NULL; }
        if (d) { d[n] = 0; *size = (size_t)n; }
    }
    fclose(f);
    return d;
}

static glyd_chatTemplate* template_file(const char* name, const char* bos, const char* eos)
{
    char path[256], msg[256] = "";
    size_t size = 0, err;
    char* src;
    glyd_chatTemplate* t;
    snprintf(path, sizeof path, "tests/data/chat/templates/%s.jinja", name);
    src = slurp(path, &size);
    if (!src) return NULL;
    t = glyd_chatTemplateCreate(src, size, bos, eos, msg, sizeof msg, &err);
    if (!t) fprintf(stderr, "# %s: %s\n", name, msg);
    free(src);
    return t;
}

/* Renders a case's messages (a JSON list of {role, content}); NULL on error. */
static char* render_json(const glyd_chatTemplate* t, json_t* msgs, int gen, int think, char* why, size_t cap)
{
    glyd_chatMessage m[16];
    glyd_chatOptions o;
    size_t i, n = json_array_size(msgs), size;
    char* text = NULL;
    if (n > 16) return NULL;
    for (i = 0; i < n; i++) {
        m[i].role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
        m[i].content = json_string_value(json_object_get(json_array_get(msgs, i), "content"));
    }
    memset(&o, 0, sizeof o);
    o.addGenerationPrompt = gen;
    o.enableThinking = think;
    o.fixedTime = 1;
    o.time = FIXED_TIME;
    if (glyd_isError(glyd_chatTemplateRender(t, m, n, &o, &text, &size, why, cap))) return NULL;
    if (strlen(text) != size) { free(text); return NULL; }
    return text;
}

TEST(chat_templates_render_as_transformers_does)
{
    json_error_t e;
    json_t* const cases = json_load_file("tests/data/chat/template_cases.json", 0, &e);
    size_t k, compared = 0;
    const char* seen[16];
    size_t nbSeen = 0;
    CHECK(cases != NULL);
    for (k = 0; k < json_array_size(cases); k++) {
        json_t* const c = json_array_get(cases, k);
        const char* const name = json_string_value(json_object_get(c, "template"));
        const char* const want = json_string_value(json_object_get(c, "expected"));
        json_t* const think = json_object_get(c, "enable_thinking");
        glyd_chatTemplate* const t = template_file(name, json_string_value(json_object_get(c, "bos_token")),
                                                   json_string_value(json_object_get(c, "eos_token")));
        char why[256] = "";
        char* got;
        size_t s;
        CHECK(t != NULL && want != NULL);
        if (!t || !want) { glyd_chatTemplateFree(t); continue; }
        got = render_json(t, json_object_get(c, "messages"), json_is_true(json_object_get(c, "add_generation_prompt")),
                          think ? json_is_true(think) : -1, why, sizeof why);
        if (!got || strcmp(got, want) != 0)
            fprintf(stderr, "# %s, %s: %s\n# got  %.300s\n# want %.300s\n", name,
                    json_string_value(json_object_get(c, "label")), why, got ? got : "(error)", want);
        CHECK(got != NULL && strcmp(got, want) == 0);
        compared++;
        for (s = 0; s < nbSeen && strcmp(seen[s], name); s++) {}
        if (s == nbSeen && nbSeen < 16) seen[nbSeen++] = name;
        free(got);
        glyd_chatTemplateFree(t);
    }
    /* Qwen3, Qwen3.5, Llama 3.1 and 3.2, Mistral Nemo and Small 3.2, Gemma 3 */
    CHECK(compared >= 154 && nbSeen >= 7);
    json_decref(cases);
}

TEST(chat_history_renders_as_qwen3_template_renders_it)
{
    /* the conversations of tests/data/chat/qwen3_history.json (rendered by
     * Qwen3's template through transformers): by the Qwen3 template, and by
     * the built-in ChatML of a model without one, which writes the history
     * the same way */
    json_error_t e;
    json_t* const cases = json_load_file("tests/data/chat/qwen3_history.json", 0, &e);
    char msg[256];
    size_t k, err;
    glyd_chatTemplate* const qwen = template_file("qwen3", NULL, "<|im_end|>");
    glyd_chatTemplate* const chatml = glyd_chatTemplateOpen("tests/data/tiny-qwen3", msg, sizeof msg, &err);
    CHECK(cases && qwen && chatml);
    CHECK(chatml && glyd_chatTemplateIsBuiltin(chatml) && !strcmp(glyd_chatTemplateEosToken(chatml), "<|im_end|>"));
    CHECK(qwen && !glyd_chatTemplateIsBuiltin(qwen));
    for (k = 0; cases && qwen && chatml && k < json_array_size(cases); k++) {
        json_t* const c = json_array_get(cases, k);
        json_t* const turns = json_object_get(c, "turns");
        json_t* const msgs = json_array();
        const char* const system = json_string_value(json_object_get(c, "system"));
        const char* const want = json_string_value(json_object_get(c, "expected"));
        int const think = json_is_true(json_object_get(c, "think"));
        size_t t;
        int pass;
        if (system) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", system));
        for (t = 0; t < json_array_size(turns); t++) {
            json_t* const turn = json_array_get(turns, t);
            const char* const reply = json_string_value(json_array_get(turn, 1));
            json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", "user", "content", json_incref(json_array_get(turn, 0))));
            if (reply) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "assistant", "content", reply));
        }
        for (pass = 0; pass < 2; pass++) {
            char why[256] = "";
            char* const got = render_json(pass ? chatml : qwen, msgs, 1, think, why, sizeof why);
            if (!got || strcmp(got, want)) fprintf(stderr, "# case %zu pass %d: %s\n# got  %s\n", k, pass, why, got ? got : "");
            CHECK(got && !strcmp(got, want));
            free(got);
        }
        json_decref(msgs);
    }
    glyd_chatTemplateFree(qwen);
    glyd_chatTemplateFree(chatml);
    json_decref(cases);
}

/* The error of a template, parsed and rendered; "" when it renders. */
static void hostile(const char* src, char* why, size_t cap)
{
    glyd_chatMessage m = { "user", "hi" };
    glyd_chatOptions o;
    size_t err, size;
    char* text = NULL;
    glyd_chatTemplate* const t = glyd_chatTemplateCreate(src, strlen(src), NULL, NULL, why, cap, &err);
    memset(&o, 0, sizeof o);
    o.enableThinking = -1;
    if (!t) return;
    why[0] = 0;
    if (!glyd_isError(glyd_chatTemplateRender(t, &m, 1, &o, &text, &size, why, cap))) why[0] = 0;
    free(text);
    glyd_chatTemplateFree(t);
}

TEST(chat_templates_refuse_what_they_cannot_render)
{
    static const struct { const char* src; const char* want; } kCases[] = {
        { "a\n{{ x | frobnicate }}", "line 2: unsupported filter 'frobnicate'" },
        { "{{ x is prime }}", "line 1: unsupported test 'prime'" },
        { "{% if true %}never closed", "line 1: unclosed 'if' tag" },
        { "\n\n{% for m in messages %}x", "line 3: unclosed 'for' tag" },
        { "{{ 'abc' ", "line 1: unclosed {{ tag" },
        { "{{ 'abc }}", "line 1: unclosed string" },
        { "{# comment", "line 1: unclosed comment" },
        { "{% endif %}", "line 1: 'endif' without its opening tag" },
        { "x\n{% include 'other.jinja' %}", "line 2: unsupported tag 'include'" },
        { "{% raw %}{{ x }}{% endraw %}", "line 1: unsupported tag 'raw'" },
        { "{% for x in y recursive %}{% endfor %}", "recursive loops are not supported" },
        { "{{ f(*args) }}", "*args and **kwargs are not supported" },
        { "{{ messages[0].content.zfill(3) }}", "line 1: unsupported method 'zfill' of a string" },
        { "{{ undefined_function() }}", "line 1: unsupported function 'undefined_function'" },
        { "{%- set m = messages[0] %}{% set m.role = 'x' %}", "'m' is not a namespace" },
        { "{{ raise_exception('roles must alternate') }}", "line 1: the template raised: roles must alternate" },
        /* a message over lines is said on one */
        { "{{ raise_exception('roles must\nalternate\t!') }}", "line 1: the template raised: roles must alternate !" },
        { "{{ 1 + 'a' }}", "unsupported operand types: int and string" },
        { "{{ nothing + 1 }}", "an undefined value in arithmetic" },
        { "{{ nothing.attr }}", "'attr' of an undefined value" },
        { "{{ 1 // 0 }}", "division by zero" },
        /* hostile: long loops, large output, deep nesting, recursion */
        { "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}{% endfor %}", "steps" },
        { "{% for i in range(100000000) %}{% endfor %}", "range: over a million items" },
        { "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "the output exceeds" },
        { "{{ 'x' * 100000000 }}", "exceeds" },
        { "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "exceeds" },
        { "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nested deeper than" },
        { "{% set ns = namespace(v=[]) %}{% for i in range(100) %}{% set ns.v = [ns.v] %}{% endfor %}", "nested deeper than" },
        { "{% set ns = namespace() %}{% set ns.me = ns %}", "a namespace cannot hold itself" },
        { "{% set ns = namespace(l=[]) %}{% set ns.l = [ns] %}{{ ns }}", "nested too deep" },
    };
    char why[512];
    size_t k;
    char deep[4096];
    for (k = 0; k < sizeof kCases / sizeof kCases[0]; k++) {
        hostile(kCases[k].src, why, sizeof why);
        if (!strstr(why, kCases[k].want)) fprintf(stderr, "# %s\n# got  %s\n# want %s\n", kCases[k].src, why, kCases[k].want);
        CHECK(strstr(why, kCases[k].want) != NULL);
        CHECK(strchr(why, '\n') == NULL);
    }
    /* nesting: 200 brackets, 200 ifs */
    memset(deep, 0, sizeof deep);
    strcpy(deep, "{{ ");
    for (k = 0; k < 200; k++) strcat(deep, "(");
    strcat(deep, "1");
    for (k = 0; k < 200; k++) strcat(deep, ")");
    strcat(deep, " }}");
    hostile(deep, why, sizeof why);
    CHECK(strstr(why, "nested too deep") != NULL || strstr(why, "deeper than") != NULL);
    deep[0] = 0;
    for (k = 0; k < 200; k++) strcat(deep, "{%if 1%}");
    hostile(deep, why, sizeof why);
    CHECK(strstr(why, "deeper than") != NULL);
    /* what renders, renders */
    hostile("{% for m in messages %}{{ loop.index }}:{{ m.content | upper }}{% endfor %}", why, sizeof why);
    CHECK(why[0] == 0);
}

TEST(chat_templates_match_jinja_on_details)
{
    /* outputs checked against jinja2 3.1 with trim_blocks and lstrip_blocks */
    static const struct { const char* src; const char* want; } kCases[] = {
        { "  {% if true %}\n  x\n  {% endif %}\ny", "  x\ny" },
        { "a {%- if true -%} b {%- endif -%} c", "abc" },
        { "a\n  {%+ if true %}b{% endif %}", "a\n  b" },
        { "{# c #}\nx{#- c -#}  y", "xy" },
        { "{{ [1, 2, 3][::-1] }}|{{ 'héllo'[1:3] }}|{{ 'abc'[-1] }}|{{ [1,2,3,4,5][1::2] }}", "[3, 2, 1]|él|c|[2, 4]" },
        { "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 10 / 5 }}", "3 -4 2 3.5 1024 2.5 2.0" },
        { "{{ none }} {{ true }} {{ [none, 'it\\'s', {'a': 1}] }}", "None True [None, \"it's\", {'a': 1}]" },
        { "{{ {'b': [1, 2.5, 'x\"y'], 'a': none} | tojson }}", "{\"b\": [1, 2.5, \"x\\\"y\"], \"a\": null}" },
        { "{{ {'b': [1], 'a': {}} | tojson(indent=2) }}", "{\n  \"b\": [\n    1\n  ],\n  \"a\": {}\n}" },
        { "{{ ' a b  '.split() }} {{ 'a,b,,c'.split(',') }} {{ '  x '.strip() }}|{{ 'xxaxx'.strip('x') }}", "['a', 'b'] ['a', 'b', '', 'c'] x|a" },
        { "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'a-b'.replace('-', '+') }}", "True True a+b" },
        { "{% for k, v in {'x': 1, 'y': 2}.items() if v > 1 %}{{ k }}{{ loop.length }}{% else %}none{% endfor %}", "y1" },
        { "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", "empty" },
        { "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", "1" },
        { "{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}", "4" },
        { "{{ 'a' if false }}|{{ 'b' if 0 else 'c' }}|{{ x | default('d') }}|{{ '' or 'e' }}|{{ 1 and 2 }}", "|c|d|e|2" },
        { "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 2 not in [1, 3] }} {{ 1 == 1.0 }}", "True False True True True" },
        { "{{ [{'r': 'u'}, {'r': 'a'}, {'r': 'u'}] | selectattr('r', 'equalto', 'u') | list | length }}", "2" },
        { "{{ ['a', 'b'] | join(', ') }} {{ 'x' ~ 1 ~ none }} {{ ['b', 'a'] | reverse | first }}", "a, b x1None a" },
        { "{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}", "[1B][23]" },
        { "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}", "02" },
        { "{% set x %}in {{ 1 + 1 }}{% endset %}{{ x | trim }}", "in 2" },
        { "{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 3 is odd }}", "False True True True True True" },
        { "{{ '\\u00e9\\n' | length }} {{ 'a\\tb' }}", "2 a\tb" },
        { "line\n", "line" },
    };
    char why[256];
    size_t k;
    for (k = 0; k < sizeof kCases / sizeof kCases[0]; k++) {
        glyd_chatOptions o;
        size_t err, size;
        char* text = NULL;
        glyd_chatTemplate* const t = glyd_chatTemplateCreate(kCases[k].src, strlen(kCases[k].src), NULL, NULL, why, sizeof why, &err);
        memset(&o, 0, sizeof o);
        o.enableThinking = -1;
        why[0] = 0;
        CHECK(t != NULL);
        if (t && !glyd_isError(glyd_chatTemplateRender(t, NULL, 0, &o, &text, &size, why, sizeof why))) {
            if (strcmp(text, kCases[k].want)) fprintf(stderr, "# %s\n# got  %s\n# want %s\n", kCases[k].src, text, kCases[k].want);
            CHECK(!strcmp(text, kCases[k].want));
        } else {
            fprintf(stderr, "# %s: %s\n", kCases[k].src, why);
            CHECK(0);
        }
        free(text);
        glyd_chatTemplateFree(t);
    }
}

static void write_file(const char* path, const char* text)
{
    FILE* const f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}

TEST(chat_template_and_stop_tokens_come_from_the_model_files)
{
    char dir[] = "/tmp/glyd-chat-XXXXXX", path[512], msg[256];
    size_t err, n, size;
    int ids[8];
    glyd_chatTemplate* t;
    glyd_chatMessage m = { "user", "hi" };
    glyd_chatOptions o;
    char* text = NULL;
    CHECK(mkdtemp(dir) != NULL);
    memset(&o, 0, sizeof o);
    o.addGenerationPrompt = 1;
    o.enableThinking = -1;
    /* no file names a stop token */
    CHECK_OK(glyd_chatStopTokens(dir, ids, 8, &n));
    CHECK(n == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, "{\"eos_token_id\": 7}");
    CHECK_OK(glyd_chatStopTokens(dir, ids, 8, &n));
    CHECK(n == 1 && ids[0] == 7);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    write_file(path, "{\"eos_token_id\": [151645, 151643]}");
    CHECK_OK(glyd_chatStopTokens(dir, ids, 8, &n));
    CHECK(n == 2 && ids[0] == 151645 && ids[1] == 151643);
    /* tokenizer_config.json: special tokens as AddedToken objects, a list of named templates */
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, "{\"bos_token\": {\"content\": \"<s>\", \"__type\": \"AddedToken\"}, \"eos_token\": \"</s>\","
                     " \"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
                     " {\"name\": \"default\", \"template\": \"{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\"}]}");
    t = glyd_chatTemplateOpen(dir, msg, sizeof msg, &err);
    CHECK(t && !glyd_chatTemplateIsBuiltin(t));
    CHECK(t && !glyd_isError(glyd_chatTemplateRender(t, &m, 1, &o, &text, &size, msg, sizeof msg)) && !strcmp(text, "<s>hi</s>"));
    free(text);
    text = NULL;
    glyd_chatTemplateFree(t);
    /* chat_template.jinja beside it comes first */
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    write_file(path, "[{{ messages | length }}]\n");
    t = glyd_chatTemplateOpen(dir, msg, sizeof msg, &err);
    CHECK(t && !glyd_isError(glyd_chatTemplateRender(t, &m, 1, &o, &text, &size, msg, sizeof msg)) && !strcmp(text, "[1]"));
    free(text);
    glyd_chatTemplateFree(t);
    /* a template outside the subset is refused at open, with its line */
    write_file(path, "ok\n{% filter upper %}x{% endfilter %}");
    t = glyd_chatTemplateOpen(dir, msg, sizeof msg, &err);
    CHECK(t == NULL && glyd_isError(err) && strstr(msg, "line 2: unsupported tag 'filter'"));
    remove(path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, "[not json");
    t = glyd_chatTemplateOpen(dir, msg, sizeof msg, &err);
    CHECK(t == NULL && strstr(msg, "tokenizer_config.json"));
    remove(path);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
}
