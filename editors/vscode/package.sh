#!/bin/sh
# Build mcec-mce.vsix: the extension with its one dependency (vscode-languageclient), packaged by @vscode/vsce.
# Needs node and npm; nothing here is run by CI.
set -eu
cd "$(dirname "$0")"
python generate_grammar.py --check  # the TextMate grammar matches grammar/mce.lark
npm install --no-audit --no-fund
npx vsce package --allow-missing-repository -o mcec-mce.vsix
echo "built $(pwd)/mcec-mce.vsix"
