# Sourced by the scripts that fetch RAPIDS RMM's sources (fetch-rapids-suite.sh,
# fetch-rapids-python-suite.sh).

# Extracts PATHS of RAPIDS RMM at COMMIT into DEST, from GitHub's tarball of the commit. Without
# network (or with GitHub refusing), one line on stderr says what could not be fetched and why,
# instead of curl's, gzip's and tar's own messages, and the status is 1.
#   extract_rapids_rmm COMMIT DEST PATH...
extract_rapids_rmm() {
  local commit=$1 dest=$2 tarball reason
  shift 2
  tarball=$(mktemp /tmp/rapids-rmm.XXXXXX.tar.gz)
  # curl's last word on it, without its "curl: (6) " prefix.
  if ! reason=$(curl -fsSL --retry 3 -o "$tarball" "https://github.com/rapidsai/rmm/archive/$commit.tar.gz" 2>&1); then
    reason=$(printf '%s\n' "$reason" | tail -n 1 | sed 's/^curl: ([0-9]*) //')
    echo "could not download RAPIDS RMM ${commit:0:7} from GitHub (${reason:-no reason given})" >&2
    rm -f "$tarball"
    return 1
  fi
  if ! reason=$(tar -xzf "$tarball" -C "$dest" --strip-components=1 "${@/#/rmm-$commit/}" 2>&1); then
    echo "the tarball of RAPIDS RMM ${commit:0:7} did not unpack ($(printf '%s\n' "$reason" | head -n 1))" >&2
    rm -f "$tarball"
    return 1
  fi
  rm -f "$tarball"
}
