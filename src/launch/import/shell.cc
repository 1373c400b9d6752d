// gpuplan import: the shell reader (see shell.h). Field splitting, quote removal and the expansions
// follow the bash manual ("Shell Expansions": parameter expansion, arithmetic expansion, word
// splitting, quote removal; "Conditional Constructs" for if and [[ ]]); tests/unit/shell_test.cc
// compares the words it builds with bash's own on random scripts.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "import_internal.h"

namespace gpuplan::import_detail {

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n'; }  // bash's default IFS
bool IsMeta(char c) { return IsBlank(c) || c == '\r' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>'; }

// Recursive descent with a depth bound (100k nested parentheses end as "not evaluated", not a crash).
class Arith {
 public:
  explicit Arith(const std::string& s) : s_(s) {}
  std::optional<int64_t> Eval() {
    auto v = Sum(0);
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::optional<int64_t> Atom(int depth) {
    if (depth > kMaxShellNesting) return std::nullopt;
    Skip();
    if (i_ < s_.size() && s_[i_] == '(') {
      ++i_;
      auto v = Sum(depth + 1);
      Skip();
      if (!v || i_ >= s_.size() || s_[i_] != ')') return std::nullopt;
      ++i_;
      return v;
    }
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) {
      const bool neg = s_[i_++] == '-';
      auto v = Atom(depth + 1);
      if (!v) return std::nullopt;
      return neg ? -*v : *v;
    }
    size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (start == i_ || i_ - start > 15) return std::nullopt;
    if (s_[start] == '0' && i_ - start > 1) return std::nullopt;  // octal: not read
    return std::stoll(s_.substr(start, i_ - start));
  }
  std::optional<int64_t> Product(int depth) {
    auto v = Atom(depth);
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/' && s_[i_] != '%')) return v;
      const char op = s_[i_++];
      if (op == '*' && i_ < s_.size() && s_[i_] == '*') return std::nullopt;  // ** : not read
      auto r = Atom(depth);
      if (!r) return std::nullopt;
      if (op != '*' && *r == 0) return std::nullopt;
      int64_t p = 0;
      if (op == '*' && __builtin_mul_overflow(*v, *r, &p)) return std::nullopt;
      v = op == '*' ? p : op == '/' ? *v / *r : *v % *r;
    }
  }
  std::optional<int64_t> Sum(int depth) {
    auto v = Product(depth);
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) return v;
      const char op = s_[i_++];
      auto r = Product(depth);
      if (!r) return std::nullopt;
      int64_t out = 0;
      if (op == '+' ? __builtin_add_overflow(*v, *r, &out) : __builtin_sub_overflow(*v, *r, &out)) return std::nullopt;
      v = out;
    }
  }
  const std::string& s_;
  size_t i_ = 0;
};

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() < 16 && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::optional<int64_t> EvalArith(const std::string& text) { return Arith(text).Eval(); }

// ---- Fields: one shell word becoming zero or more words ----

void Fields::Literal(const std::string& s, bool quoted) {
  ++pieces_;
  cur_.text += s;
  bytes_ += s.size();
  if (quoted || !s.empty()) have_ = true;
}

void Fields::Split(const std::string& s) {
  if (!split_) return Literal(s, false);
  ++pieces_;
  for (char c : s) {
    if (IsBlank(c)) {
      Break(false);
    } else {
      cur_.text += c;
      have_ = true;
    }
  }
  bytes_ += s.size();
}

void Fields::Break(bool force) {
  if (!split_) {  // an assignment: the words of an array joined by a space
    if (force) cur_.text += ' ';
    return;
  }
  if (have_ || force) out_.push_back(cur_);
  cur_.text.clear();
  cur_.unresolved.clear();
  have_ = false;
}

std::vector<Word> Fields::Take() {
  if (have_ || !split_) out_.push_back(cur_);
  return std::move(out_);
}

// ---- variables ----

std::optional<Word> ShellReader::Var(const std::string& name) const {
  if (name == "0") return Word{file_, line_, ""};
  if (auto it = st_.vars.find(name); it != st_.vars.end()) return it->second;
  if (auto it = st_.arrays.find(name); it != st_.arrays.end()) {  // $ARR is its first element
    if (it->second.empty()) return Word{"", line_, ""};
    return it->second[0];
  }
  return std::nullopt;
}

Word ShellReader::VarOrUnset(const std::string& name) const {
  if (auto v = Var(name)) return *v;
  if (AllDigits(name)) return Word{"$" + name, line_, "$" + name + " is an argument given when the script runs"};
  return Word{"$" + name, line_, "$" + name + " is not set in the file (an environment variable?)"};
}

void ShellReader::Scalar(Fields& f, const Word& w, bool quoted) {
  if (!w.unresolved.empty() && (quoted || !f.splits() || w.text.find_first_of(" \t\n") == std::string::npos)) {
    f.Literal(w.text, quoted);
    f.Unresolved(w.unresolved);
  } else if (!w.unresolved.empty()) {
    // Split as bash would; the words that hold the unknown part ($NAME, $(cmd)) carry why.
    const bool any_dollar = w.text.find('$') != std::string::npos;
    size_t k = 0;
    while (k <= w.text.size()) {
      size_t e = w.text.find_first_of(" \t\n", k);
      if (e == std::string::npos) e = w.text.size();
      const std::string piece = w.text.substr(k, e - k);
      if (!piece.empty()) {
        f.Literal(piece, false);
        if (!any_dollar || piece.find('$') != std::string::npos) f.Unresolved(w.unresolved);
      }
      if (e < w.text.size()) f.Break(false);
      k = e + 1;
    }
  } else if (quoted) {
    f.Literal(w.text, true);
  } else {
    f.Split(w.text);
  }
}

Status ShellReader::Assign(const std::string& name, Word value, bool append) {
  if (append) {
    if (auto old = Var(name)) {
      value.text = old->text + value.text;
      if (value.unresolved.empty()) value.unresolved = old->unresolved;
    }
  }
  st_.value_bytes += static_cast<int64_t>(value.text.size());
  if (value.text.size() > kMaxShellValueBytes || st_.value_bytes > kMaxShellTotalBytes)
    return Status::BadInput({file_, value.line, name},
                            "the values grow past " + Str(kMaxShellValueBytes >> 20) + " MiB (a variable built from itself?)");
  st_.arrays.erase(name);
  st_.vars[name] = std::move(value);
  return Status::Ok();
}

// The text up to the matching close (quotes and nesting respected); i_ is after `open`.
Result<std::string> ShellReader::Enclosed(char open, char close) {
  const int start_line = line_;
  int depth = 1;
  std::string out;
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (c == '\n') ++line_;
    if (c == '\\' && i_ + 1 < s_.size()) {
      out += c;
      out += s_[i_ + 1];
      if (s_[i_ + 1] == '\n') ++line_;
      i_ += 2;
      continue;
    }
    if (c == '\'' || c == '"') {
      const char q = c;
      out += c;
      ++i_;
      while (i_ < s_.size() && s_[i_] != q) {
        if (s_[i_] == '\n') ++line_;
        if (q == '"' && s_[i_] == '\\' && i_ + 1 < s_.size()) out += s_[i_++];
        out += s_[i_++];
      }
      if (i_ >= s_.size()) return Fail(std::string("unterminated ") + (q == '"' ? "double" : "single") + " quote", start_line);
      out += s_[i_++];
      continue;
    }
    if (c == open) ++depth;
    if (c == close && --depth == 0) {
      ++i_;
      return out;
    }
    out += c;
    ++i_;
  }
  return Fail(std::string("'") + open + "' never closed (no matching '" + close + "')", start_line);
}

// ---- expansions ----

Status ShellReader::ExpandArith(Fields& f, bool quoted) {
  i_ += 2;
  auto inner = Enclosed('(', ')');
  if (!inner.ok()) return inner.status();
  std::string body = *inner;
  if (!body.empty() && body.back() == ')') body.pop_back();
  else if (i_ < s_.size() && s_[i_] == ')') ++i_;
  std::string subst, why;  // bare names in arithmetic are variables
  for (size_t k = 0; k < body.size();) {
    if (IsIdentStart(body[k]) || body[k] == '$') {
      if (body[k] == '$') ++k;
      const bool brace = k < body.size() && body[k] == '{';
      if (brace) ++k;
      size_t m = k;
      while (m < body.size() && IsIdent(body[m])) ++m;
      if (m == k) {
        subst += '$';
        continue;
      }
      const Word v = VarOrUnset(body.substr(k, m - k));
      if (!v.unresolved.empty() && why.empty()) why = v.unresolved;
      subst += v.text.empty() ? "0" : v.text;
      k = brace && m < body.size() && body[m] == '}' ? m + 1 : m;
    } else {
      subst += body[k++];
    }
  }
  const auto v = why.empty() ? EvalArith(subst) : std::nullopt;
  if (v) Scalar(f, Word{Str(*v), line_, ""}, quoted);
  else Scalar(f, Word{"$((" + body + "))", line_, why.empty() ? "$((" + body + ")) is not arithmetic gpuplan evaluates" : why}, quoted);
  return Status::Ok();
}

Status ShellReader::ExpandCommand(Fields& f, bool quoted) {
  ++i_;
  auto inner = Enclosed('(', ')');
  if (!inner.ok()) return inner.status();
  // $(dirname "$0") and $(cd "$(dirname "$0")" && pwd): the directory of this file.
  if (inner->find("dirname") != std::string::npos && (inner->find("$0") != std::string::npos || inner->find("BASH_SOURCE") != std::string::npos)) {
    std::error_code ec;  // absolute: the names built from it are not relative to the file a second time
    const fs::path abs = fs::absolute(DirOf(file_), ec);
    std::string dir = (ec ? DirOf(file_) : abs.lexically_normal()).string();
    if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    f.Literal(dir, quoted);
    return Status::Ok();
  }
  Scalar(f, Word{"$(" + *inner + ")", line_, "$(" + *inner + ") is a command's output, unknown here"}, quoted);
  return Status::Ok();
}

// The word of ${X:-word}: read as a word of its own (expansions, quote removal); split when the
// ${ } is unquoted, except the parts the word quotes itself.
Status ShellReader::ExpandDefault(Fields& f, const std::string& word, bool quoted) {
  if (nesting_ + 1 > kMaxShellNesting) return Fail("${ } nested more than " + Str(kMaxShellNesting) + " levels deep", line_);
  ShellReader sub(word, *this, nesting_ + 1);
  return sub.ReadWordInto(f, false, quoted);
}

Status ShellReader::ExpandBraces(Fields& f, bool quoted) {
  const int line = line_;
  ++i_;
  auto inner = Enclosed('{', '}');
  if (!inner.ok()) return inner.status();
  const std::string& b = *inner;
  const bool length = !b.empty() && b[0] == '#' && b.size() > 1;
  size_t k = length ? 1 : 0;
  while (k < b.size() && IsIdent(b[k])) ++k;
  const std::string name = b.substr(length ? 1 : 0, k - (length ? 1 : 0));
  const std::string rest = b.substr(k);
  const auto arr = st_.arrays.find(name);
  const Word unknown{"${" + b + "}", line, "${" + b + "} is not evaluated"};
  if (name.empty()) return Scalar(f, unknown, quoted), Status::Ok();
  if (rest == "[@]" || rest == "[*]") {
    std::vector<Word> words;
    if (arr != st_.arrays.end()) words = arr->second;
    else if (auto v = Var(name)) words = {*v};
    else if (!length) return Scalar(f, Word{"${" + b + "}", line, "array " + name + " is not set in the file"}, quoted), Status::Ok();
    if (length) return Scalar(f, Word{Str(static_cast<int64_t>(words.size())), line, ""}, quoted), Status::Ok();
    if (quoted && rest == "[*]") {
      std::string joined;
      for (size_t j = 0; j < words.size(); ++j) joined += (j ? " " : "") + words[j].text;
      return Scalar(f, Word{joined, line, ""}, true), Status::Ok();
    }
    f.Array();
    for (size_t j = 0; j < words.size(); ++j) {
      if (j > 0) f.Break(quoted || !f.splits());
      f.LineHint(words[j].line);
      Scalar(f, words[j], quoted);
    }
    return Status::Ok();
  }
  if (rest.size() > 2 && rest[0] == '[' && rest.back() == ']') {
    const std::string idx = rest.substr(1, rest.size() - 2);
    if (arr != st_.arrays.end() && AllDigits(idx)) {
      const size_t n = std::stoul(idx);
      const Word w = n < arr->second.size() ? arr->second[n] : Word{"", line, ""};
      return Scalar(f, length ? Word{Str(static_cast<int64_t>(w.text.size())), line, w.unresolved} : w, quoted), Status::Ok();
    }
    return Scalar(f, unknown, quoted), Status::Ok();
  }
  const std::optional<Word> v = Var(name);
  if (length) {
    if (!rest.empty() || !v) return Scalar(f, unknown, quoted), Status::Ok();
    return Scalar(f, Word{Str(static_cast<int64_t>(v->text.size())), line, v->unresolved}, quoted), Status::Ok();
  }
  if (rest.empty()) return Scalar(f, VarOrUnset(name), quoted), Status::Ok();
  for (const char* op : {":-", ":=", "-", "="}) {
    if (rest.rfind(op, 0) != 0) continue;
    const bool colon = op[0] == ':';
    if (v && !(colon && v->text.empty())) return Scalar(f, *v, quoted), Status::Ok();
    const std::string word = rest.substr(std::strlen(op));
    if (op[std::strlen(op) - 1] == '=') {  // assign the default, then expand it
      Fields value(line, false);
      if (nesting_ + 1 > kMaxShellNesting) return Fail("${ } nested more than " + Str(kMaxShellNesting) + " levels deep", line);
      ShellReader sub(word, *this, nesting_ + 1);
      GPUPLAN_RETURN_IF_ERROR(sub.ReadWordInto(value, false, true));
      auto w = value.Take();
      Word assigned = w.empty() ? Word{"", line, ""} : w[0];
      if (Active()) GPUPLAN_RETURN_IF_ERROR(Assign(name, assigned, false));
      return Scalar(f, assigned, quoted), Status::Ok();
    }
    return ExpandDefault(f, word, quoted);
  }
  if (rest.rfind(":+", 0) == 0 || rest.rfind("+", 0) == 0) {
    if (!v || (rest[0] == ':' && v->text.empty())) return Status::Ok();
    return ExpandDefault(f, rest.substr(rest[0] == ':' ? 2 : 1), quoted);
  }
  Scalar(f, unknown, quoted);
  return Status::Ok();
}

Status ShellReader::Expand(Fields& f, bool quoted) {  // s_[i_] == '$'
  ++i_;
  if (i_ >= s_.size()) return f.Literal("$", quoted), Status::Ok();
  const char c = s_[i_];
  if (c == '(' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') return ExpandArith(f, quoted);
  if (c == '(') return ExpandCommand(f, quoted);
  if (c == '{') return ExpandBraces(f, quoted);
  if (c == '@' || c == '*') {  // the script's own arguments, given when it runs: none here
    ++i_;
    return Status::Ok();
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '#' || c == '?' || c == '$' || c == '!') {
    ++i_;
    if (c == '0') return Scalar(f, *Var("0"), quoted), Status::Ok();
    Scalar(f, Word{std::string("$") + c, line_, std::string("$") + c + " is known only when the script runs"}, quoted);
    return Status::Ok();
  }
  if (IsIdentStart(c)) {
    size_t k = i_;
    while (k < s_.size() && IsIdent(s_[k])) ++k;
    const std::string name = s_.substr(i_, k - i_);
    i_ = k;
    Scalar(f, VarOrUnset(name), quoted);
    return Status::Ok();
  }
  f.Literal("$", quoted);
  return Status::Ok();
}

Status ShellReader::ReadDoubleQuoted(Fields& f) {  // s_[i_] == '"'
  const int start = line_;
  ++i_;
  const size_t pieces = f.pieces(), arrays = f.arrays();
  while (i_ < s_.size()) {
    const char d = s_[i_];
    if (d == '"') {
      ++i_;
      if (f.pieces() == pieces && f.arrays() == arrays) f.Literal("", true);  // "" is a word; "${EMPTY[@]}" none
      return Status::Ok();
    }
    if (d == '\n') ++line_;
    if (d == '\\' && i_ + 1 < s_.size() && std::strchr("$`\"\\\n", s_[i_ + 1])) {
      if (s_[i_ + 1] == '\n') ++line_;
      else f.Literal(std::string(1, s_[i_ + 1]), true);
      i_ += 2;
      continue;
    }
    if (d == '$') {
      GPUPLAN_RETURN_IF_ERROR(Expand(f, true));
      continue;
    }
    if (d == '`') {
      size_t end = s_.find('`', i_ + 1);
      if (end == std::string::npos) return Fail("unterminated backquote", line_);
      f.Unresolved("`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here");
      i_ = end + 1;
      continue;
    }
    f.Literal(std::string(1, d), true);
    ++i_;
  }
  return Fail("unterminated double quote", start);
}

// One word into f. top_level: a word of a command (ends at a blank or an operator); otherwise the
// whole text is the word of a ${X:-word}, whose unquoted blanks split it (unless dq: inside "...").
Status ShellReader::ReadWordInto(Fields& f, bool top_level, bool dq) {
  while (i_ < s_.size()) {
    if (f.size_bytes() > kMaxShellValueBytes) return Fail("a word grows past " + Str(kMaxShellValueBytes >> 20) + " MiB", line_);
    const char c = s_[i_];
    if (top_level && IsMeta(c)) break;
    if (!top_level && IsBlank(c) && !dq) {
      if (c == '\n') ++line_;
      if (f.splits()) f.Break(false);
      else f.Literal(std::string(1, c), false);  // an assignment's value is not split
      ++i_;
      continue;
    }
    if (c == '\\') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {  // a continuation: removed
        i_ += 2;
        ++line_;
        continue;
      }
      if (i_ + 1 < s_.size()) f.Literal((dq && !std::strchr("$`\"\\", s_[i_ + 1]) ? "\\" : "") + std::string(1, s_[i_ + 1]), true);
      i_ += 2;
      continue;
    }
    if (c == '\'' && !dq) {
      const int start = line_;
      size_t end = s_.find('\'', i_ + 1);
      if (end == std::string::npos) return Fail("unterminated single quote", start);
      for (size_t k = i_ + 1; k < end; ++k) line_ += s_[k] == '\n';
      f.Literal(s_.substr(i_ + 1, end - i_ - 1), true);
      i_ = end + 1;
      continue;
    }
    if (c == '"') {
      GPUPLAN_RETURN_IF_ERROR(ReadDoubleQuoted(f));
      continue;
    }
    if (c == '$') {
      GPUPLAN_RETURN_IF_ERROR(Expand(f, dq));
      continue;
    }
    if (c == '`') {
      size_t end = s_.find('`', i_ + 1);
      if (end == std::string::npos) return Fail("unterminated backquote", line_);
      f.Unresolved("`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here");
      f.Literal("", false);
      i_ = end + 1;
      continue;
    }
    if (c == '\n') ++line_;
    f.Literal(std::string(1, c), dq);
    ++i_;
  }
  return Status::Ok();
}

Result<std::vector<Word>> ShellReader::ReadWord(bool split) {
  Fields f(line_, split);
  GPUPLAN_RETURN_IF_ERROR(ReadWordInto(f, true, false));
  return f.Take();
}

// ---- assignments, arrays, commands ----

bool ShellReader::AssignmentAt(std::string& name, bool& append, bool& array) const {
  size_t k = i_;
  if (k >= s_.size() || !IsIdentStart(s_[k])) return false;
  while (k < s_.size() && IsIdent(s_[k])) ++k;
  append = k < s_.size() && s_[k] == '+';
  if (append) ++k;
  if (k >= s_.size() || s_[k] != '=') return false;
  name = s_.substr(i_, (append ? k - 1 : k) - i_);
  array = k + 1 < s_.size() && s_[k + 1] == '(';
  return true;
}

Status ShellReader::ReadArray(const std::string& name, bool append) {
  const int start = line_;
  std::vector<Word> words;
  for (;;) {
    while (i_ < s_.size() && (IsBlank(s_[i_]) || s_[i_] == '\r' || (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n'))) {
      if (s_[i_] == '\n') ++line_;
      if (s_[i_] == '\\') ++i_, ++line_;
      ++i_;
    }
    if (i_ >= s_.size()) return Fail("array " + name + "=( is never closed with ')'", start);
    if (s_[i_] == ')') {
      ++i_;
      break;
    }
    if (s_[i_] == '#') {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      continue;
    }
    const size_t before = i_;
    auto w = ReadWord();
    if (!w.ok()) return w.status();
    if (i_ == before) ++i_;  // a stray ( ; & | < >
    for (auto& x : *w) words.push_back(std::move(x));
    if (words.size() > kMaxShellArrayWords) return Fail("array " + name + " grows past " + Str(kMaxShellArrayWords) + " words", start);
  }
  if (!Active()) return Status::Ok();
  auto& arr = st_.arrays[name];
  if (!append) arr.clear();
  else if (arr.empty() && st_.vars.count(name)) arr.push_back(st_.vars[name]);  // A=x; A+=(y): (x y)
  st_.vars.erase(name);
  for (const auto& w : words) st_.value_bytes += static_cast<int64_t>(w.text.size());
  if (arr.size() + words.size() > kMaxShellArrayWords || st_.value_bytes > kMaxShellTotalBytes)
    return Fail("array " + name + " grows past " + Str(kMaxShellArrayWords) + " words (an array built from itself?)", start);
  arr.insert(arr.end(), words.begin(), words.end());
  if (own_ && std::find(st_.array_order.begin(), st_.array_order.end(), name) == st_.array_order.end()) st_.array_order.push_back(name);
  return Status::Ok();
}

void ShellReader::SkipRedirection() {
  while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '<' || s_[i_] == '>' || s_[i_] == '&' || s_[i_] == '-'))
    ++i_;
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  if (i_ < s_.size() && s_[i_ - 1] != '&' && s_[i_] != '\n') (void)ReadWord();  // the target file
}

Status ShellReader::Source(const Command& cmd) {
  if (cmd.size() < 2) return Status::Ok();
  const Word& w = cmd[1];
  const Location at{file_, w.line, cmd[0].text};
  if (!w.unresolved.empty()) {
    notes.push_back({at, w.text + ": not read (" + w.unresolved + ")"});
    return Status::Ok();
  }
  const std::string path = Relative(file_, w.text);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    notes.push_back({at, "'" + path + "' not found: its variables are unknown here"});
    return Status::Ok();
  }
  if (depth_ + 1 > kMaxDepth) return Bad(at, "files source files more than " + Str(kMaxDepth) + " levels deep");
  auto text = ReadInputFile(path);
  if (!text.ok()) return Bad(at, "cannot read '" + path + "': " + text.status().reason());
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(*text, path));
  ShellReader sub(*text, path, st_, depth_ + 1, false);
  std::vector<Command> ignored;  // a sourced file gives variables and arrays; its commands are not the launch
  GPUPLAN_RETURN_IF_ERROR(sub.Read(ignored));
  notes.insert(notes.end(), sub.notes.begin(), sub.notes.end());
  return Status::Ok();
}

Status ShellReader::Read(std::vector<Command>& out) {
  if (s_.size() > kMaxShellTextBytes)
    return Fail("larger than " + Str(kMaxShellTextBytes >> 20) + " MiB: not a launch script", 1);
  Command cur;
  bool at_start = true, assign_cmd = false;
  auto end_command = [&]() -> Status {
    bool consumed = false;
    GPUPLAN_RETURN_IF_ERROR(Keyword(cur, consumed));
    if (!consumed && Active()) {
      if (!cur.empty() && (cur[0].text == "source" || cur[0].text == ".")) GPUPLAN_RETURN_IF_ERROR(Source(cur));
      else if (!cur.empty()) out.push_back(std::move(cur));
    }
    cur.clear();
    at_start = true;
    assign_cmd = false;
    return Status::Ok();
  };
  auto in_condition = [&] { return !cur.empty() && (cur[0].text == "if" || cur[0].text == "elif"); };
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
      i_ += 2;
      ++line_;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i_;
      continue;
    }
    if ((c == '&' || c == '|') && i_ + 1 < s_.size() && s_[i_ + 1] == c && in_condition()) {  // if A && B; then
      cur.push_back({std::string(2, c), line_, ""});
      i_ += 2;
      continue;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '{' || c == '}') {
      if (c == '\n') ++line_;
      ++i_;
      GPUPLAN_RETURN_IF_ERROR(end_command());
      continue;
    }
    if (c == '#') {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      continue;
    }
    if (c == '<' || c == '>' || (std::isdigit(static_cast<unsigned char>(c)) && i_ + 1 < s_.size() && s_[i_ + 1] == '>')) {
      if (c == '<' && i_ + 1 < s_.size() && s_[i_ + 1] == '<') return Fail("here-documents (<<) are not read: put the command on its own lines", line_);
      SkipRedirection();
      continue;
    }
    std::string name;
    bool append = false, array = false;
    if ((at_start || assign_cmd) && AssignmentAt(name, append, array)) {
      i_ += name.size() + (append ? 2 : 1);
      if (array) {
        ++i_;
        GPUPLAN_RETURN_IF_ERROR(ReadArray(name, append));
        continue;
      }
      const int line = line_;
      Word value{"", line, ""};
      if (i_ < s_.size() && !IsMeta(s_[i_])) {
        auto w = ReadWord(false);  // the value is one word (no splitting)
        if (!w.ok()) return w.status();
        if (!w->empty()) value = {(*w)[0].text, line, (*w)[0].unresolved};
      }
      if (Active()) GPUPLAN_RETURN_IF_ERROR(Assign(name, value, append));
      continue;
    }
    const size_t before = i_;
    auto words = ReadWord();
    if (!words.ok()) return words.status();
    if (i_ == before) ++i_;  // a character no rule takes
    if (at_start && cur.empty() && words->size() == 1) {  // then / else / fi / do / done: a branch changes here
      bool keyword = false;
      GPUPLAN_RETURN_IF_ERROR(BranchWord((*words)[0], keyword));
      if (keyword) continue;
    }
    if (at_start && !words->empty()) {
      const std::string& first = (*words)[0].text;
      assign_cmd = first == "export" || first == "declare" || first == "local" || first == "readonly" || first == "typeset";
    }
    if (!words->empty()) at_start = false;
    for (auto& w : *words) cur.push_back(std::move(w));
    if (cur.size() > kMaxShellArrayWords) return Fail("a command of more than " + Str(kMaxShellArrayWords) + " words", line_);
  }
  GPUPLAN_RETURN_IF_ERROR(end_command());
  if (!ifs_.empty()) return Fail("an if is never closed with fi", line_);
  return Status::Ok();
}

// then / else / fi / do / done at the start of a command (a command may follow on the same line).
Status ShellReader::BranchWord(const Word& w, bool& keyword) {
  const std::string& k = w.text;
  if (!w.unresolved.empty() || (k != "then" && k != "else" && k != "fi" && k != "do" && k != "done")) return Status::Ok();
  keyword = true;
  if (k == "else") {
    if (ifs_.empty()) return Fail("else without if", w.line);
    auto& top = ifs_.back();
    top.active = top.parent_active && !top.taken;
    top.taken = true;
  } else if (k == "fi") {
    if (ifs_.empty()) return Fail("fi without if", w.line);
    ifs_.pop_back();
  }
  return Status::Ok();
}

// if / then / elif / else / fi at the start of a command: the branch stack. `consumed`: the command
// was the keyword (and its test) only; a command after `then` / `else` stays in cmd.
Status ShellReader::Keyword(Command& cmd, bool& consumed) {
  if (cmd.empty()) return Status::Ok();
  const std::string k = cmd[0].text;
  if (k != "if" && k != "elif") return Status::Ok();
  consumed = true;
  const int line = cmd[0].line;
  if (k == "if") {
    if (static_cast<int>(ifs_.size()) >= kMaxShellNesting) return Fail("if nested more than " + Str(kMaxShellNesting) + " levels deep", line);
    ifs_.push_back({Active(), false, false});
  } else if (ifs_.empty()) {
    return Fail("elif without if", line);
  }
  auto& top = ifs_.back();
  if (!top.parent_active || top.taken) {
    top.active = false;
    return Status::Ok();
  }
  std::string why;
  const std::optional<bool> v = Test(cmd, 1, why);
  if (!v) notes.push_back({{file_, line, k}, "cannot tell which branch runs (" + why + "): the first branch is read"});
  top.active = v.value_or(true);
  top.taken = top.active;
  return Status::Ok();
}

namespace {

// One [ ] / [[ ]] / test expression without && ||: nullopt = undecidable (why says what).
std::optional<bool> TestOne(std::vector<Word> w, std::string& why) {
  bool negate = false;
  if (!w.empty() && (w[0].text == "[" || w[0].text == "[[" || w[0].text == "test")) {
    const std::string close = w[0].text == "[" ? "]" : w[0].text == "[[" ? "]]" : "";
    w.erase(w.begin());
    if (!close.empty()) {
      if (w.empty() || w.back().text != close) return why = "a test without its " + close, std::nullopt;
      w.pop_back();
    }
  } else if (w.size() == 1 && (w[0].text == "true" || w[0].text == ":")) {
    return true;
  } else if (w.size() == 1 && w[0].text == "false") {
    return false;
  } else {
    why = "the command '" + (w.empty() ? std::string() : w[0].text) + "'";
    return std::nullopt;
  }
  size_t bangs = 0;  // erased at once: `[ ! ! ! ... ]` stays linear
  while (bangs < w.size() && w[bangs].text == "!") negate = !negate, ++bangs;
  w.erase(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(bangs));
  if (w.size() == 2 && w[0].text.size() == 2 && w[0].text[0] == '-' && std::strchr("fderswx", w[0].text[1]))
    return !negate;  // the files a script checks are taken as present (it runs where it was written for)
  for (const auto& x : w)
    if (!x.unresolved.empty()) return why = x.unresolved, std::nullopt;
  auto num = [](const std::string& s) -> std::optional<int64_t> {
    std::string t = s;
    while (!t.empty() && IsBlank(t.back())) t.pop_back();
    size_t a = 0;
    while (a < t.size() && IsBlank(t[a])) ++a;
    t = t.substr(a);
    const bool neg = !t.empty() && t[0] == '-';
    if (neg) t = t.substr(1);
    if (!AllDigits(t)) return std::nullopt;
    return neg ? -std::stoll(t) : std::stoll(t);
  };
  std::optional<bool> r;
  if (w.empty()) {
    r = false;
  } else if (w.size() == 1) {
    r = !w[0].text.empty();
  } else if (w.size() == 2) {
    const std::string& op = w[0].text;
    if (op == "-z") r = w[1].text.empty();
    else if (op == "-n") r = !w[1].text.empty();
  } else if (w.size() == 3) {
    const std::string &a = w[0].text, &op = w[1].text, &b = w[2].text;
    if (op == "=" || op == "==" || op == "!=") {
      if (b.find_first_of("*?[") != std::string::npos) return why = "a pattern match (" + b + ")", std::nullopt;
      r = (a == b) == (op != "!=");
    } else if (op == "-eq" || op == "-ne" || op == "-lt" || op == "-le" || op == "-gt" || op == "-ge") {
      const auto x = num(a), y = num(b);
      if (!x || !y) return why = "a numeric test of a value that is not a number", std::nullopt;
      r = op == "-eq" ? *x == *y : op == "-ne" ? *x != *y : op == "-lt" ? *x < *y : op == "-le" ? *x <= *y : op == "-gt" ? *x > *y : *x >= *y;
    }
  }
  if (!r) return why = "a test gpuplan does not evaluate", std::nullopt;
  return negate ? !*r : *r;
}

}  // namespace

// The test of an if: operands joined by && and || (equal precedence, left to right, as bash).
std::optional<bool> ShellReader::Test(const Command& cmd, size_t from, std::string& why) const {
  std::optional<bool> acc;
  std::string op;
  std::vector<Word> part;
  auto fold = [&]() -> bool {
    std::string w;
    std::optional<bool> v = TestOne(part, w);
    part.clear();
    if (op.empty()) acc = v;
    else if (op == "&&") acc = (acc && !*acc) ? std::optional<bool>(false) : (acc && v ? std::optional<bool>(*v) : (v && !*v ? std::optional<bool>(false) : std::nullopt));
    else acc = (acc && *acc) ? std::optional<bool>(true) : (acc && v ? std::optional<bool>(*v) : (v && *v ? std::optional<bool>(true) : std::nullopt));
    if (!acc && why.empty()) why = w;
    return true;
  };
  for (size_t k = from; k < cmd.size(); ++k) {
    if (cmd[k].text == "&&" || cmd[k].text == "||") {
      fold();
      op = cmd[k].text;
    } else {
      part.push_back(cmd[k]);
    }
  }
  fold();
  if (!acc && why.empty()) why = "a test gpuplan does not evaluate";
  return acc;
}

}  // namespace gpuplan::import_detail
