// output_file.hpp: a file a command writes when its work is done (--output, --metrics-json).
#pragma once

#include <string>
#include <string_view>

#include "tessera/status.hpp"

namespace tessera::cli {

// check() runs before the work starts (before the model loads) and refuses, with
// the operating system's reason, a path that could not be written: a missing or
// read-only folder, a folder in the file's place, a read-only file. It creates
// nothing (it makes a probe file in the folder and removes it at once), so a run
// that fails afterwards leaves no file behind.
//
// write() puts the whole text in a temporary file in the same folder
// (".NAME.tmp.XXXXXX") and renames it into place: the path holds its old
// content or the new, never half of it. A path that is a symbolic link, a
// device or a pipe (/dev/stdout, /dev/null, a FIFO) is written in place
// instead, through the link, so that the link and the device stay as they are;
// one that names the file stdout or stderr is (/dev/stdout when stdout is
// redirected to a file) gets the text after what the command printed there.
class OutputFile {
 public:
  // `what` names the content in messages: "cannot write WHAT to 'PATH': REASON".
  // Errors are invalid_argument (a usage mistake: exit code 2).
  static Result<OutputFile> check(const std::string& path, const std::string& what);

  // Errors (a full disk, say) are internal: exit code 1.
  Status write(std::string_view text) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string what_;
  bool in_place_ = false;
};

}  // namespace tessera::cli
