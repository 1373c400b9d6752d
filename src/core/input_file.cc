#include "gpuplan/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

Result<std::string> ReadInputFile(const std::string& path, int64_t max_bytes) {
  const Location where{path, 0, ""};
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

}  // namespace gpuplan
