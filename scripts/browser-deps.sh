#!/usr/bin/env bash
# What the browser test needs, installed only when missing: Debian's `chromium` (a browser build
# downloaded by Playwright is impossible here) and the npm package `playwright-core` (the driver
# only, no browser) in .state/node. A second run does nothing and takes well under a second.
set -euo pipefail
. "$(dirname "$0")/env.sh"

PLAYWRIGHT_CORE_VERSION="${RECON_PLAYWRIGHT_CORE_VERSION:-1.65.1}"
node_dir="$RECON_STATE/node"

if [ ! -x /usr/bin/chromium ]; then
  [ "$(id -u)" = 0 ] || die "chromium is missing and installing it needs root: sudo apt-get install chromium"
  say "installing chromium from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -q && apt-get install -y -q --no-install-recommends chromium; } \
    >"$RECON_STATE/chromium-install.log" 2>&1 \
    || die "apt-get could not install chromium: see $RECON_STATE/chromium-install.log"
fi

command -v node >/dev/null || die "no Node.js found: install it (apt-get install nodejs npm)"
command -v npm >/dev/null || die "no npm found: install it (apt-get install npm)"
installed=""
pkg="$node_dir/node_modules/playwright-core/package.json"
if [ -f "$pkg" ]; then
  installed=$(node -p "require(process.argv[1]).version" "$pkg" 2>/dev/null || true)
fi
if [ "$installed" != "$PLAYWRIGHT_CORE_VERSION" ]; then
  say "installing playwright-core $PLAYWRIGHT_CORE_VERSION into $node_dir"
  mkdir -p "$node_dir"
  [ -f "$node_dir/package.json" ] || echo '{"name": "recon-browser-test", "private": true}' \
    > "$node_dir/package.json"
  # playwright-core never downloads a browser on install; say so anyway.
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$node_dir" --no-audit --no-fund --save-exact \
    --loglevel=error "playwright-core@$PLAYWRIGHT_CORE_VERSION" >"$node_dir/npm-install.log" 2>&1 \
    || die "npm could not install playwright-core: see $node_dir/npm-install.log"
fi
