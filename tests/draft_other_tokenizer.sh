#!/bin/sh
# draft_other_tokenizer.sh PROGRAM DRAFT_DIR
# Copy the draft model with two token ids swapped in its vocab.json (token 0 "!" and token 1 "\""),
# run PROGRAM --assistant-model COPY, and pass if it refuses with a message naming the tokenizer.
# Chapter 08: a draft's ids must mean the target's.
program=$1; draft=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$draft/config.json" "$draft/model.safetensors" "$draft/merges.txt" "$dir/" || exit 1
sed 's/"!": 0, "\\"": 1,/"!": 1, "\\"": 0,/' "$draft/vocab.json" > "$dir/vocab.json" || exit 1
if cmp -s "$draft/vocab.json" "$dir/vocab.json"; then echo "the vocab.json edit changed nothing"; exit 1; fi
exec "$(dirname "$0")/expect_exit.sh" 1 "has another tokenizer: token 0 differs.*--tokenizer DIR" \
    "$program" --assistant-model "$dir" -n 4
