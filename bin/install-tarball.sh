#!/bin/sh
# The production install: the packed tarball (`npm pack`, which ships the lockfile as
# npm-shrinkwrap.json) unpacked into DIR, then only its runtime dependencies installed, at exactly
# the versions the tests ran with. The Dockerfile runs this script, and so does
# test/install/production-install.test.ts (with --offline): one list of steps for both, which
# test/install/dockerfile.test.ts checks.
#
#   bin/install-tarball.sh TARBALL DIR [more npm ci options]
set -eu
if [ "$#" -lt 2 ]; then
  echo "usage: $0 TARBALL DIR [npm ci options]" >&2
  exit 2
fi
tarball=$1
dir=$2
shift 2
mkdir -p "$dir"
tar xzf "$tarball" -C "$dir" --strip-components=1
cd "$dir"
npm ci --omit=dev --no-audit --no-fund "$@"
