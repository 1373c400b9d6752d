#include "gpuplan/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace gpuplan {

namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

std::string Size(int64_t bytes) {
  return bytes % (int64_t{1} << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + "-byte";
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

thread_local const ScopedInputOverlay* overlay = nullptr;

}  // namespace

ScopedInputOverlay::ScopedInputOverlay(std::map<std::string, std::string> files, std::string refusal)
    : files_(std::move(files)), refusal_(std::move(refusal)), previous_(overlay) {
  overlay = this;
}

ScopedInputOverlay::~ScopedInputOverlay() { overlay = previous_; }

bool InputPathExists(const std::string& path) {
  if (overlay != nullptr) return overlay->files().count(path) > 0;
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool InputPathIsDirectory(const std::string& path) {
  if (overlay != nullptr) return false;
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

Result<std::string> ReadInputFile(const std::string& path, int64_t max_bytes) {
  const Location where{path, 0, ""};
  if (overlay != nullptr) {
    auto it = overlay->files().find(path);
    if (it == overlay->files().end())
      return Status::BadInput(where, overlay->refusal().empty()
                                         ? "not readable here: files are posted as content, never named by a path"
                                         : overlay->refusal());
    if (static_cast<int64_t>(it->second.size()) > max_bytes)
      return Status::BadInput(where, "file is " + std::to_string(it->second.size()) + " bytes, over the " + Size(max_bytes) +
                                         " input limit (kMaxInputFileBytes)");
    return it->second;
  }
  if (path.empty()) return Status::BadInput(where, "cannot open file: empty path");
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; regular files ignore it.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) return Status::BadInput(where, std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return Status::BadInput(where, std::string("cannot open file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::BadInput(where, std::string("cannot read ") + KindOf(st.st_mode) +
                                       ": gpuplan reads job, config and CSV inputs from regular files only");
  const auto too_big = [&](int64_t size) {
    return Status::BadInput(where, "file is " + std::to_string(size) + " bytes, over the " + Size(max_bytes) +
                                       " input limit (kMaxInputFileBytes)");
  };
  if (st.st_size > max_bytes) return too_big(st.st_size);
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::BadInput(where, std::string("cannot read file: ") + std::strerror(errno));
    }
    if (n == 0) break;
    // A file that grows while read (a log being written) is held to the same cap.
    if (static_cast<int64_t>(text.size()) + n > max_bytes) return too_big(static_cast<int64_t>(text.size()) + n);
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

Status CheckNoNulBytes(const std::string& text, const std::string& file) {
  const size_t nul = text.find('\0');
  if (nul == std::string::npos) return Status::Ok();
  int line = 1;
  for (size_t i = 0; i < nul; ++i) line += text[i] == '\n';
  return Status::BadInput({file, line, ""}, "NUL byte in the file (not a text file?); inputs are UTF-8 text");
}

namespace {
// "|", ">", "|-", ">+2": the header of a YAML block scalar, whose indented lines are free text.
bool IsBlockScalarHeader(std::string_view tok) {
  if (tok.empty() || tok.size() > 3 || (tok[0] != '|' && tok[0] != '>')) return false;
  return tok.find_first_not_of("+-0123456789", 1) == std::string_view::npos;
}
}  // namespace

Status CheckNoStrayComma(const std::string& t, const std::string& file) {
  int depth = 0;              // inside this many [ ] / { }
  char quote = 0;             // inside '...' or "..."
  bool after_closing = false; // a top-level ']' '}' or quoted string ended, nothing significant since
  int block_indent = -1;      // inside a block scalar whose header line had this indentation
  int line = 0;
  // A UTF-8 byte-order mark (yaml-cpp skips it) is not part of the first token.
  for (size_t pos = t.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; pos < t.size();) {
    ++line;
    size_t end = t.find('\n', pos);
    if (end == std::string::npos) end = t.size();
    const std::string_view l(t.data() + pos, end - pos);
    pos = end + 1;
    const size_t first = l.find_first_not_of(" \t\r");
    const int indent = static_cast<int>(std::min(l.find_first_not_of(' '), l.size()));
    if (!quote && depth == 0 && block_indent >= 0) {
      if (first == std::string_view::npos || indent > block_indent) continue;  // block scalar text
      block_indent = -1;
    }
    bool seen = false;  // a significant character on this line
    size_t tok_begin = 0, tok_end = 0;
    size_t start = 0;
    if (!quote && depth == 0) {
      if (!l.empty() && l[0] == '%') continue;  // a directive (%YAML 1.2)
      // A document marker is not a value: what follows it starts the document.
      if ((l.substr(0, 3) == "---" || l.substr(0, 3) == "...") && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r'))
        start = 3;
    }
    auto token_start = [&](size_t i) {
      const char p = i == 0 ? ' ' : l[i - 1];
      return p == ' ' || p == '\t' || p == '\r' || p == '[' || p == '{' || p == ',' || (p == ':' && depth > 0);
    };
    for (size_t i = start; i < l.size(); ++i) {
      const char c = l[i];
      if (quote) {
        if (quote == '"' && c == '\\') {
          ++i;
        } else if (c == quote) {
          if (quote == '\'' && i + 1 < l.size() && l[i + 1] == '\'') {
            ++i;  // '' inside '...'
          } else {
            quote = 0;
            after_closing = depth == 0;
            seen = true;
          }
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') continue;
      if (c == '#' && token_start(i)) break;  // a comment, to the end of the line
      if ((c == '!' || c == '&' || c == '*') && depth == 0 && token_start(i)) {
        // A tag, anchor or alias is not the value; a ',' in it is the stray comma yaml-cpp loops on.
        for (; i < l.size() && l[i] != ' ' && l[i] != '\t' && l[i] != '\r'; ++i)
          if (l[i] == ',')
            return Status::BadInput({file, line, ""}, "a ',' outside any [ ] or { } list (a stray comma after the value?)");
        continue;
      }
      if (token_start(i)) tok_begin = i;
      tok_end = i + 1;
      if (c == ',' && depth == 0 && (!seen || after_closing))
        return Status::BadInput({file, line, ""}, "a ',' outside any [ ] or { } list (a stray comma after the value?)");
      seen = true;
      after_closing = false;
      if ((c == '"' || c == '\'') && token_start(i)) {
        quote = c;
      } else if ((c == '[' || c == '{') && (depth > 0 || token_start(i))) {
        ++depth;
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
        after_closing = depth == 0;
      }
    }
    if (!quote && depth == 0 && tok_end > tok_begin && IsBlockScalarHeader(l.substr(tok_begin, tok_end - tok_begin)))
      block_indent = indent;
  }
  return Status::Ok();
}

Status CheckJsonDepth(const std::string& text, const Location& where, int max_depth) {
  int depth = 0, line = where.line > 0 ? where.line : 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return Status::BadInput({where.file, line, where.key}, "JSON nested deeper than " + std::to_string(max_depth) +
                                                                   " levels (real files nest a few; a damaged or generated file?)");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

}  // namespace gpuplan
