/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chat.c: a model's chat template and stop tokens, from its files (a
 * folder or a packed model): chat_template.jinja or tokenizer_config.json's
 * chat_template with its bos_token and eos_token, rendered by jinja_*.c
 * with the variables transformers' apply_chat_template passes; and the
 * eos_token_id of generation_config.json or config.json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"
#include "jinja.h"

/* What `glyd run` spoke before models' templates: ChatML, a reply going
 * back into the history without its thinking, as Qwen's templates do. */
static const char kChatML[] =
    "{%- for message in messages %}\n"
    "{{- '<|im_start|>' + message.role + '\\n' }}\n"
    "{%- if message.role == 'assistant' and '</think>' in message.content %}\n"
    "{{- message.content.split('</think>')[-1].lstrip('\\n') }}\n"
    "{%- else %}\n"
    "{{- message.content }}\n"
    "{%- endif %}\n"
    "{{- '<|im_end|>\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "{{- '<|im_start|>assistant\\n' }}\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}\n"
    "{{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "{%- endif %}\n"
    "{%- endif %}\n";

struct glyd_chatTemplate_s {
    jinja_template* t;
    char* bos;  /* NULL: none */
    char* eos;
    int builtin;
};

static void say(char* message, size_t cap, const char* fmt, const char* a, const char* b)
{
    if (message && cap) snprintf(message, cap, fmt, a, b);
}

/* A file of a model folder or a packed model; io_failed when it is not there. */
static size_t read_model_file(const char* path, const char* name, char** text, size_t* size)
{
    *text = NULL;
    *size = 0;
    if (glyd_isPackedModel(path)) {
        glyd_packParams pp;
        glyd_model* m;
        size_t r;
        memset(&pp, 0, sizeof pp);
        m = glyd_modelOpen(path, &pp, &r);
        if (!m) return r;
        r = glyd_modelReadFile(m, name, text, size);
        glyd_modelClose(m);
        return r;
    } else {
        char full[4096];
        if ((size_t)snprintf(full, sizeof full, "%s/%s", path, name) >= sizeof full) return GLYD_ERROR(io_failed);
        return glyd_readFile(full, text, size);
    }
}

/* A special token as tokenizer_config.json writes it: a string, or an
 * AddedToken object with its "content". */
static const char* token_text(json_t* v)
{
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static char* dup_or_null(const char* s)
{
    char* d;
    if (!s) return NULL;
    d = (char*)malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

glyd_chatTemplate* glyd_chatTemplateCreate(const char* source, size_t size, const char* bosToken, const char* eosToken,
                                           char* message, size_t cap, size_t* error)
{
    glyd_chatTemplate* const c = (glyd_chatTemplate*)calloc(1, sizeof *c);
    *error = 0;
    if (!c || (bosToken && !(c->bos = dup_or_null(bosToken))) || (eosToken && !(c->eos = dup_or_null(eosToken)))) {
        glyd_chatTemplateFree(c);
        say(message, cap, "%s%s", "out of memory", "");
        *error = GLYD_ERROR(memory_allocation);
        return NULL;
    }
    c->t = jinja_parse(source, size, message, cap);
    if (!c->t) {
        glyd_chatTemplateFree(c);
        *error = GLYD_ERROR(GENERIC);
        return NULL;
    }
    return c;
}

glyd_chatTemplate* glyd_chatTemplateOpen(const char* path, char* message, size_t cap, size_t* error)
{
    char *cfgText = NULL, *jinjaText = NULL;
    size_t cfgSize = 0, jinjaSize = 0, r;
    json_t* cfg = NULL;
    const char* source = NULL;
    size_t sourceSize = 0;
    glyd_chatTemplate* c = NULL;
    *error = 0;
    r = read_model_file(path, "tokenizer_config.json", &cfgText, &cfgSize);
    if (!glyd_isError(r)) {
        json_error_t e;
        cfg = json_loadb(cfgText, cfgSize, 0, &e);
        if (!cfg || !json_is_object(cfg)) {
            say(message, cap, "%.200s: tokenizer_config.json is not a JSON object%s", path, "");
            *error = GLYD_ERROR(GENERIC);
            goto done;
        }
    }
    /* transformers reads chat_template.jinja first when a model has it */
    r = read_model_file(path, "chat_template.jinja", &jinjaText, &jinjaSize);
    if (!glyd_isError(r)) {
        source = jinjaText;
        sourceSize = jinjaSize;
    } else if (cfg) {
        json_t* t = json_object_get(cfg, "chat_template");
        if (json_is_array(t)) {
            /* a list of named templates: the default one */
            size_t i;
            json_t* def = NULL;
            for (i = 0; i < json_array_size(t); i++) {
                json_t* const e = json_array_get(t, i);
                const char* const name = json_string_value(json_object_get(e, "name"));
                if (name && !strcmp(name, "default")) def = json_object_get(e, "template");
            }
            t = def;
        }
        if (json_is_string(t)) {
            source = json_string_value(t);
            sourceSize = json_string_length(t);
        }
    }
    if (source) {
        c = glyd_chatTemplateCreate(source, sourceSize, token_text(json_object_get(cfg, "bos_token")),
                                    token_text(json_object_get(cfg, "eos_token")), message, cap, error);
    } else {
        c = glyd_chatTemplateCreate(kChatML, sizeof kChatML - 1, NULL, "<|im_end|>", message, cap, error);
        if (c) c->builtin = 1;
    }
done:
    json_decref(cfg);
    free(cfgText);
    free(jinjaText);
    return c;
}

void glyd_chatTemplateFree(glyd_chatTemplate* c)
{
    if (!c) return;
    jinja_free(c->t);
    free(c->bos);
    free(c->eos);
    free(c);
}

int glyd_chatTemplateIsBuiltin(const glyd_chatTemplate* c) { return c->builtin; }
const char* glyd_chatTemplateEosToken(const glyd_chatTemplate* c) { return c->eos ? c->eos : ""; }

size_t glyd_chatTemplateRender(const glyd_chatTemplate* c, const glyd_chatMessage* messages, size_t n,
                               const glyd_chatOptions* options, char** text, size_t* size, char* message, size_t cap)
{
    json_t* const vars = json_object();
    json_t* const list = json_array();
    jinja_options jo;
    size_t i;
    char* out = NULL;
    *text = NULL;
    *size = 0;
    memset(&jo, 0, sizeof jo);
    if (options) {
        jo.fixedTime = options->fixedTime;
        jo.time = options->time;
    }
    if (!vars || !list) {
        json_decref(vars);
        json_decref(list);
        say(message, cap, "%s%s", "out of memory", "");
        return GLYD_ERROR(memory_allocation);
    }
    for (i = 0; i < n; i++) {
        json_t* const m = json_pack("{s:s,s:s}", "role", messages[i].role ? messages[i].role : "",
                                    "content", messages[i].content ? messages[i].content : "");
        if (!m || json_array_append_new(list, m)) {
            json_decref(vars);
            json_decref(list);
            say(message, cap, "chat: message %s is not valid UTF-8%s", messages[i].role ? messages[i].role : "", "");
            return GLYD_ERROR(GENERIC);
        }
    }
    /* what apply_chat_template passes: no tools, no documents */
    json_object_set_new(vars, "messages", list);
    json_object_set_new(vars, "tools", json_null());
    json_object_set_new(vars, "documents", json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(options && options->addGenerationPrompt));
    json_object_set_new(vars, "bos_token", c->bos ? json_string(c->bos) : json_null());
    json_object_set_new(vars, "eos_token", c->eos ? json_string(c->eos) : json_null());
    if (options && options->enableThinking >= 0)
        json_object_set_new(vars, "enable_thinking", json_boolean(options->enableThinking));
    out = jinja_render(c->t, vars, &jo, size, message, cap);
    json_decref(vars);
    if (!out) return GLYD_ERROR(GENERIC);
    *text = out;
    return 0;
}

/* eos_token_id: a number or a list of numbers */
static size_t ids_of(json_t* v, int* ids, size_t cap)
{
    size_t n = 0, i;
    if (json_is_integer(v)) {
        if (json_integer_value(v) >= 0 && json_integer_value(v) <= 0x7fffffff) {
            if (cap) ids[0] = (int)json_integer_value(v);
            n = 1;
        }
        return n;
    }
    for (i = 0; i < json_array_size(v); i++) {
        json_t* const e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 0x7fffffff) continue;
        if (n < cap) ids[n] = (int)json_integer_value(e);
        n++;
    }
    return n;
}

size_t glyd_chatStopTokens(const char* path, int* ids, size_t cap, size_t* count)
{
    static const char* const kFiles[] = { "generation_config.json", "config.json" };
    size_t k;
    *count = 0;
    for (k = 0; k < 2; k++) {
        char* text = NULL;
        size_t size = 0;
        json_t* j;
        json_error_t e;
        if (glyd_isError(read_model_file(path, kFiles[k], &text, &size))) continue;
        j = json_loadb(text, size, 0, &e);
        free(text);
        if (j) {
            json_t* v = json_object_get(j, "eos_token_id");
            /* multimodal configs keep it in their text part */
            if (!v && k == 1) v = json_object_get(json_object_get(j, "text_config"), "eos_token_id");
            *count = ids_of(v, ids, cap);
        }
        json_decref(j);
        if (*count) return 0;
    }
    return 0;
}
