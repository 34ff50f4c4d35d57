# Sourced by the scripts here that clear a folder: no script removes a folder it did not make.
#
# fresh_workdir DIR: DIR, empty, for this run.  A folder a script made holds the marker file
#   .companion-workdir (written when the script created it); only such a folder is removed.
#   A folder without the marker (on a cluster, $WORK is the user's work file system), a
#   symbolic link, a file, "/" or an empty name is refused in one line and left as it was.
# remove_project_cache DIR: remove DIR only when it lies under this checkout's .devrun/cache
#   (the project's own cache, which the scripts fill and may empty), never a link out of it.
WORKDIR_MARK=.companion-workdir

fresh_workdir() {
  local dir=${1:-} me
  me=$(basename "$0")
  case "$dir" in
    ""|/|.|..|"$HOME"|"$HOME/") echo "$me: refusing to use '$dir' as a work folder it would clear; set WORK to a new folder such as /tmp/$me-work" >&2; return 1 ;;
  esac
  if [ -L "$dir" ]; then
    echo "$me: WORK=$dir is a symbolic link, which is never cleared; set WORK to a new folder" >&2; return 1
  fi
  if [ -e "$dir" ]; then
    if [ ! -d "$dir" ]; then
      echo "$me: WORK=$dir is not a folder; set WORK to a new folder" >&2; return 1
    fi
    if [ ! -f "$dir/$WORKDIR_MARK" ] || [ -L "$dir/$WORKDIR_MARK" ]; then
      echo "$me: WORK=$dir exists and was not made by this script (no $WORKDIR_MARK in it), so it is never removed; set WORK to a new folder, or remove it yourself" >&2
      return 1
    fi
    rm -rf -- "$dir" || { echo "$me: cannot clear its work folder $dir; remove it yourself" >&2; return 1; }
  fi
  mkdir -p -- "$dir" || { echo "$me: cannot create WORK=$dir; set WORK to a folder you can write to" >&2; return 1; }
  echo "made by $me; its next run clears this folder" > "$dir/$WORKDIR_MARK"
}

remove_project_cache() {
  local dir=${1:-} root real
  root=$(cd .devrun/cache 2>/dev/null && pwd -P) || return 0   # no cache: nothing to remove
  [ -d "$dir" ] && [ ! -L "$dir" ] || return 0
  real=$(cd "$dir" && pwd -P) || return 1
  case "$real/" in
    "$root"/?*) rm -rf -- "$real" ;;
    *) echo "$(basename "$0"): $dir is not under the project's cache .devrun/cache; it is not removed" >&2; return 1 ;;
  esac
}
