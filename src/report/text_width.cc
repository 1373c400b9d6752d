#include "gpuplan/text_width.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace gpuplan {

namespace {

// The code point starting at s[i] and its length in bytes (invalid bytes count as one column each).
char32_t Decode(std::string_view s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) n = 1;
  char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *len = n;
  return cp;
}

bool Wide(char32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
         (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD);
}

// Where a continuation of `line` starts: past a short "key: " label, else four past the indent.
size_t HangingIndent(std::string_view line, size_t width) {
  size_t lead = 0;
  while (lead < line.size() && line[lead] == ' ') ++lead;
  const size_t colon = line.find(": ", lead);
  if (colon != std::string_view::npos && colon - lead <= 24) {
    bool label = true;
    for (size_t i = lead; i < colon; ++i) {
      const char c = line[i];
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '-' || c == '_' || c == '.' || c == '(' || c == ')' ||
            c == '/' || c == '*'))
        label = false;
    }
    size_t at = colon + 2;
    while (at < line.size() && line[at] == ' ') ++at;  // aligned labels ("confirm:  ")
    if (label && at <= width / 3) return at;
  }
  return std::min(lead + 4, width / 3);
}

// One line broken into pieces of at most `width` columns.
void WrapLine(std::string_view line, size_t width, size_t hang, std::string* out) {
  const size_t indent = hang != std::string::npos ? std::min(hang, width / 2) : HangingIndent(line, width);
  size_t start = 0;  // byte offset of the current piece in `line`
  bool first = true;
  while (start < line.size()) {
    const size_t room = first ? width : width - indent;
    size_t cols = 0, i = start, last_space = std::string_view::npos;
    while (i < line.size()) {
      size_t len = 0;
      const char32_t cp = Decode(line, i, &len);
      const size_t w = Wide(cp) ? 2 : 1;
      if (cols + w > room) break;
      if (cp == ' ' && i > start) last_space = i;
      cols += w;
      i += len;
    }
    size_t end = i, next = i;
    if (i < line.size() && last_space != std::string_view::npos) end = last_space, next = last_space + 1;
    std::string_view piece = line.substr(start, end - start);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    if (!first) out->append(indent, ' ');
    out->append(piece);
    out->push_back('\n');
    while (next < line.size() && line[next] == ' ') ++next;
    start = next;
    first = false;
  }
}

}  // namespace

size_t DisplayWidth(std::string_view line) {
  size_t cols = 0;
  for (size_t i = 0; i < line.size();) {
    size_t len = 0;
    cols += Wide(Decode(line, i, &len)) ? 2 : 1;
    i += len;
  }
  return cols;
}

std::string FitWidth(const std::string& text, size_t width, size_t hanging_indent) {
  if (width < 20) width = 20;
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool has_nl = nl != std::string::npos;
    if (!has_nl) nl = text.size();
    const std::string_view line(text.data() + pos, nl - pos);
    if (DisplayWidth(line) <= width) {
      out.append(line);
      if (has_nl) out.push_back('\n');
    } else {
      WrapLine(line, width, hanging_indent, &out);
      if (!has_nl) out.pop_back();
    }
    pos = nl + 1;
  }
  return out;
}

std::string WrapCommand(const std::string& prefix, const std::string& command, size_t indent, size_t width) {
  // Chunks: the words up to the first option, then each option with the words after it.
  std::vector<std::string> chunks(1);
  size_t at = 0;
  while (at < command.size()) {
    const size_t end = std::min(command.find(' ', at), command.size());
    const std::string word = command.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    if (word.rfind("--", 0) == 0 && !chunks.back().empty()) chunks.emplace_back();
    chunks.back() += (chunks.back().empty() ? "" : " ") + word;
  }
  std::string out = prefix;
  size_t col = DisplayWidth(prefix);
  bool first = true;
  for (const std::string& c : chunks) {
    const size_t w = DisplayWidth(c);
    if (!first && col + 1 + w > width) {
      out += "\n" + std::string(indent, ' ') + c;
      col = indent + w;
    } else {
      out += (first ? "" : " ") + c;
      col += (first ? 0 : 1) + w;
    }
    first = false;
  }
  return out;
}

}  // namespace gpuplan
