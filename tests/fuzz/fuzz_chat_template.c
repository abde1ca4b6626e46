/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_chat_template.c: hostile chat templates. Each input is a template
 * (seeds: the vendors' templates of tests/data/chat/templates) parsed and,
 * when accepted, rendered over a short conversation with thinking off and
 * on. A refusal is one line naming the template's line; a rendering ends
 * within the renderer's bounds on steps, output and nesting, and holds no
 * more bytes than its size says. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_llm.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

static void check_reason(const char* why)
{
    REQUIRE(why[0] != 0);
    REQUIRE(strchr(why, '\n') == NULL);
    REQUIRE(!strncmp(why, "chat template line ", 19) || strstr(why, "out of memory"));
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const glyd_chatMessage kMsgs[] = {
        { "system", "Be brief." },
        { "user", "What is 1+1?" },
        { "assistant", "<think>\nA sum.\n</think>\n\nTwo." },
        { "user", "And \"2+2\"? Caf\xc3\xa9" },
    };
    char why[512];
    size_t err, k;
    glyd_chatTemplate* t;
    why[0] = 0;
    t = glyd_chatTemplateCreate((const char*)data, size, "<s>", "</s>", why, sizeof why, &err);
    if (!t) {
        check_reason(why);
        return 0;
    }
    for (k = 0; k < 2; k++) {
        glyd_chatOptions o;
        char* text = NULL;
        size_t n = 0;
        memset(&o, 0, sizeof o);
        o.addGenerationPrompt = (int)k;
        o.enableThinking = (int)k;
        o.fixedTime = 1;
        o.time = 1767225600LL;
        why[0] = 0;
        if (glyd_isError(glyd_chatTemplateRender(t, kMsgs, sizeof kMsgs / sizeof kMsgs[0], &o, &text, &n, why, sizeof why))) {
            REQUIRE(text == NULL);
            check_reason(why);
        } else {
            REQUIRE(text != NULL && text[n] == 0 && n <= (16u << 20));
            free(text);
        }
    }
    glyd_chatTemplateFree(t);
    return 0;
}
