# Glyd: `make` builds the library and CLI; `make test` runs every test.
# See README.md for the full list of targets.

CC       ?= cc
PREFIX   ?= /usr/local
BUILD    ?= build
OPT      ?= -O3
CFLAGS   ?= $(OPT) -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wpointer-arith -Wvla
CPPFLAGS += -Iinclude -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64
ALLFLAGS  = -std=c11 -fPIC -fvisibility=hidden $(WARNINGS) $(CPPFLAGS) $(CFLAGS)
LDLIBS   += -lxxhash -lpthread -lm

LIB_SRC  := $(sort $(wildcard lib/*/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
DEPS     := $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

.PHONY: all lib clean deps
all: $(BUILD)/glyd $(BUILD)/libglyd.a $(BUILD)/libglyd.so

lib: $(BUILD)/libglyd.a $(BUILD)/libglyd.so

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libglyd.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libglyd.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libglyd.so.0 $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/glyd: $(CLI_OBJ) $(BUILD)/libglyd.a
	$(CC) $(CFLAGS) $(CLI_OBJ) $(BUILD)/libglyd.a -o $@ $(LDLIBS)

deps:
	@./tools/deps.sh build

clean:
	rm -rf $(BUILD)

-include $(DEPS)
