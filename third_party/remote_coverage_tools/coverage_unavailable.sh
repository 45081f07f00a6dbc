#!/bin/sh
echo "coverage is not available in Leash's offline Bazel build" >&2
exit 1
