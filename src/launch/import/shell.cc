// gpuplan import: the shell reader (see shell.h).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "import_internal.h"

namespace gpuplan::import_detail {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Integer arithmetic of $(( )): + - * / % and parentheses over numbers (variables already substituted).
class Arith {
 public:
  explicit Arith(std::string s) : s_(std::move(s)) {}
  std::optional<int64_t> Eval() {
    auto v = Sum();
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::optional<int64_t> Atom() {
    Skip();
    if (i_ < s_.size() && s_[i_] == '(') {
      ++i_;
      auto v = Sum();
      Skip();
      if (!v || i_ >= s_.size() || s_[i_] != ')') return std::nullopt;
      ++i_;
      return v;
    }
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      auto v = Atom();
      if (!v) return std::nullopt;
      return -*v;
    }
    size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (start == i_ || i_ - start > 15) return std::nullopt;
    return std::stoll(s_.substr(start, i_ - start));
  }
  std::optional<int64_t> Product() {
    auto v = Atom();
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/' && s_[i_] != '%')) return v;
      const char op = s_[i_++];
      auto r = Atom();
      if (!r) return std::nullopt;
      if (op != '*' && *r == 0) return std::nullopt;
      if (op == '*' && std::abs(*v) > (int64_t{1} << 31) && std::abs(*r) > 1) return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
  }
  std::optional<int64_t> Sum() {
    auto v = Product();
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) return v;
      const char op = s_[i_++];
      auto r = Product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
  }
  std::string s_;
  size_t i_ = 0;
};

ShellReader::Exp ShellReader::Var(const std::string& name) const {
  Exp e;
  if (name == "0") {
    e.text = file_;
    return e;
  }
  if (auto it = st_.vars.find(name); it != st_.vars.end()) {
    e.text = it->second.text;
    e.unresolved = it->second.unresolved;
    return e;
  }
  if (auto it = st_.arrays.find(name); it != st_.arrays.end() && !it->second.empty()) {  // $ARR is its first element
    e.text = it->second[0].text;
    e.unresolved = it->second[0].unresolved;
    return e;
  }
  e.text = "$" + name;
  e.unresolved = "$" + name + " is not set in the file (an environment variable?)";
  return e;
}

// $NAME and ${NAME} inside a ${X:-default} default.
std::string ShellReader::ExpandSimple(const std::string& t, std::string& unresolved) const {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '$' || i + 1 >= t.size()) {
      out += t[i];
      continue;
    }
    size_t j = i + 1;
    const bool brace = t[j] == '{';
    if (brace) ++j;
    size_t k = j;
    while (k < t.size() && IsIdent(t[k])) ++k;
    if (k == j) {
      out += t[i];
      continue;
    }
    Exp e = Var(t.substr(j, k - j));
    if (!e.unresolved.empty() && unresolved.empty()) unresolved = e.unresolved;
    out += e.text;
    i = brace && k < t.size() && t[k] == '}' ? k : k - 1;
  }
  return out;
}

// The text up to the matching close (quotes and nesting respected); i_ is after `open`.
Result<std::string> ShellReader::Enclosed(char open, char close, int& lines) {
  const int start_line = line_;
  int depth = 1;
  std::string out;
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (c == '\n') ++lines, ++line_;
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

Result<ShellReader::Exp> ShellReader::ExpandArith() {
  Exp e;
  int lines = 0;
  i_ += 2;
  auto inner = Enclosed('(', ')', lines);
  if (!inner.ok()) return inner.status();
  std::string body = *inner;
  if (!body.empty() && body.back() == ')') body.pop_back();
  else if (i_ < s_.size() && s_[i_] == ')') ++i_;
  // bare names in arithmetic are variables
  std::string subst, why;
  for (size_t k = 0; k < body.size();) {
    if (IsIdentStart(body[k])) {
      size_t m = k;
      while (m < body.size() && IsIdent(body[m])) ++m;
      Exp v = Var(body.substr(k, m - k));
      if (!v.unresolved.empty() && why.empty()) why = v.unresolved;
      subst += v.text;
      k = m;
    } else if (body[k] == '$') {
      ++k;
      if (k < body.size() && body[k] == '{') ++k;
      size_t m = k;
      while (m < body.size() && IsIdent(body[m])) ++m;
      Exp v = Var(body.substr(k, m - k));
      if (!v.unresolved.empty() && why.empty()) why = v.unresolved;
      subst += v.text;
      k = m < body.size() && body[m] == '}' ? m + 1 : m;
    } else {
      subst += body[k++];
    }
  }
  auto v = why.empty() ? Arith(subst).Eval() : std::nullopt;
  if (v) e.text = Str(*v);
  else e.text = "$((" + body + "))", e.unresolved = why.empty() ? "$((" + body + ")) is not arithmetic gpuplan evaluates" : why;
  return e;
}

Result<ShellReader::Exp> ShellReader::ExpandCommand() {
  Exp e;
  int lines = 0;
  ++i_;
  auto inner = Enclosed('(', ')', lines);
  if (!inner.ok()) return inner.status();
  // $(dirname "$0") and $(cd "$(dirname "$0")" && pwd): the directory of this file.
  if (inner->find("dirname") != std::string::npos && (inner->find("$0") != std::string::npos || inner->find("BASH_SOURCE") != std::string::npos)) {
    std::error_code ec;  // absolute: the names built from it are not relative to the file a second time
    const fs::path abs = fs::absolute(DirOf(file_), ec);
    e.text = (ec ? DirOf(file_) : abs.lexically_normal()).string();
    if (e.text.size() > 1 && e.text.back() == '/') e.text.pop_back();
    return e;
  }
  e.text = "$(" + *inner + ")";
  e.unresolved = "$(" + *inner + ") is a command's output, unknown here";
  return e;
}

Result<ShellReader::Exp> ShellReader::ExpandBraces() {
  Exp e;
  int lines = 0;
  ++i_;
  auto inner = Enclosed('{', '}', lines);
  if (!inner.ok()) return inner.status();
  const std::string& b = *inner;
  size_t k = 0;
  if (!b.empty() && b[0] == '#') {
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not evaluated";
    return e;
  }
  while (k < b.size() && IsIdent(b[k])) ++k;
  const std::string name = b.substr(0, k);
  const std::string rest = b.substr(k);
  if (rest == "[@]" || rest == "[*]") {
    e.is_array = true;
    if (auto it = st_.arrays.find(name); it != st_.arrays.end()) {
      e.words = it->second;
    } else if (auto v = st_.vars.find(name); v != st_.vars.end()) {
      e.words = {v->second};
    } else {
      e.words = {Word{"${" + b + "}", line_, "array " + name + " is not set in the file"}};
    }
    return e;
  }
  if (rest.size() > 2 && rest[0] == '[' && rest.back() == ']') {
    auto it = st_.arrays.find(name);
    const std::string idx = rest.substr(1, rest.size() - 2);
    if (it != st_.arrays.end() && !idx.empty() && std::all_of(idx.begin(), idx.end(), ::isdigit) && idx.size() < 6 &&
        std::stoul(idx) < it->second.size()) {
      const Word& w = it->second[std::stoul(idx)];
      e.text = w.text;
      e.unresolved = w.unresolved;
      return e;
    }
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not set in the file";
    return e;
  }
  Exp v = Var(name);
  const bool set = v.unresolved.empty() || st_.vars.count(name);
  for (const char* op : {":-", ":=", "-", "="}) {
    if (rest.rfind(op, 0) != 0) continue;
    const bool colon = op[0] == ':';
    if (set && !(colon && v.text.empty())) return v;
    std::string why;
    e.text = ExpandSimple(rest.substr(std::strlen(op)), why);
    e.unresolved = why;
    return e;
  }
  if (rest.rfind(":+", 0) == 0 || rest.rfind("+", 0) == 0) {
    if (!set || v.text.empty()) return e;
    std::string why;
    e.text = ExpandSimple(rest.substr(rest[0] == ':' ? 2 : 1), why);
    e.unresolved = why;
    return e;
  }
  if (!rest.empty()) {
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not evaluated";
    return e;
  }
  return v;
}

Result<ShellReader::Exp> ShellReader::Expand(bool quoted) {
  // s_[i_] == '$'
  Exp e;
  ++i_;
  if (i_ >= s_.size()) {
    e.text = "$";
    return e;
  }
  const char c = s_[i_];
  if (c == '(' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') return ExpandArith();
  if (c == '(') return ExpandCommand();
  if (c == '{') return ExpandBraces();
  if (c == '@' || c == '*') {  // the rest of the command line, given at run time
    ++i_;
    e.is_array = true;
    return e;
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '#' || c == '?' || c == '$' || c == '!') {
    ++i_;
    if (c == '0') return Var("0");
    e.text = std::string("$") + c;
    e.unresolved = e.text + " is known only when the script runs";
    return e;
  }
  if (IsIdentStart(c)) {
    size_t k = i_;
    while (k < s_.size() && IsIdent(s_[k])) ++k;
    const std::string name = s_.substr(i_, k - i_);
    i_ = k;
    return Var(name);
  }
  e.text = "$";
  return e;
}

Result<std::vector<Word>> ShellReader::ReadWord() {
  Word w{"", line_, ""};
  bool quoted = false, only_expansion = true, any_expansion = false;
  std::optional<Exp> single;  // the one expansion a word is made of
  auto add_exp = [&](Exp&& e) {
    if (!e.unresolved.empty() && w.unresolved.empty()) w.unresolved = e.unresolved;
    if (!any_expansion && w.text.empty()) single = e;
    else single.reset();
    any_expansion = true;
    if (e.is_array) {
      for (size_t k = 0; k < e.words.size(); ++k) w.text += (k ? " " : "") + e.words[k].text;
    } else {
      w.text += e.text;
    }
  };
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>')
      break;
    if (c == '\\') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
        ++line_;
        break;
      }
      if (i_ + 1 < s_.size()) w.text += s_[i_ + 1];
      i_ += 2;
      only_expansion = false;
      continue;
    }
    if (c == '\'') {
      const int start = line_;
      ++i_;
      size_t end = s_.find('\'', i_);
      if (end == std::string::npos) return Fail("unterminated single quote", start);
      for (size_t k = i_; k < end; ++k) line_ += s_[k] == '\n';
      w.text += s_.substr(i_, end - i_);
      i_ = end + 1;
      quoted = true;
      only_expansion = false;
      continue;
    }
    if (c == '"') {
      const int start = line_;
      ++i_;
      quoted = true;
      bool closed = false;
      while (i_ < s_.size()) {
        const char d = s_[i_];
        if (d == '"') {
          ++i_;
          closed = true;
          break;
        }
        if (d == '\n') ++line_;
        if (d == '\\' && i_ + 1 < s_.size() && std::strchr("$`\"\\\n", s_[i_ + 1])) {
          if (s_[i_ + 1] == '\n') ++line_;
          else w.text += s_[i_ + 1];
          i_ += 2;
          only_expansion = false;
          continue;
        }
        if (d == '$') {
          auto e = Expand(true);
          if (!e.ok()) return e.status();
          add_exp(std::move(e).value());
          continue;
        }
        if (d == '`') {
          size_t end = s_.find('`', i_ + 1);
          if (end == std::string::npos) return Fail("unterminated backquote", line_);
          if (w.unresolved.empty()) w.unresolved = "`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here";
          i_ = end + 1;
          continue;
        }
        w.text += d;
        only_expansion = false;
        ++i_;
      }
      if (!closed) return Fail("unterminated double quote", start);
      continue;
    }
    if (c == '$') {
      auto e = Expand(false);
      if (!e.ok()) return e.status();
      add_exp(std::move(e).value());
      continue;
    }
    if (c == '`') {
      size_t end = s_.find('`', i_ + 1);
      if (end == std::string::npos) return Fail("unterminated backquote", line_);
      if (w.unresolved.empty()) w.unresolved = "`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here";
      i_ = end + 1;
      continue;
    }
    w.text += c;
    only_expansion = false;
    ++i_;
  }
  // "${ARR[@]}" and $@: the array's own words, at their own lines.
  if (single && only_expansion && single->is_array) return single->words;
  // An unquoted $VAR alone splits into words ("--nproc_per_node 8 --nnodes 1").
  if (single && only_expansion && !quoted && single->unresolved.empty()) {
    std::vector<Word> out;
    std::istringstream is(single->text);
    for (std::string t; is >> t;) out.push_back({t, w.line, ""});
    return out;
  }
  if (!quoted && w.text.empty() && any_expansion && w.unresolved.empty()) return std::vector<Word>{};
  return std::vector<Word>{w};
}

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
    while (i_ < s_.size() && (std::isspace(static_cast<unsigned char>(s_[i_])) || (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n'))) {
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
    auto w = ReadWord();
    if (!w.ok()) return w.status();
    if (w->empty() && i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != ')') ++i_;  // a stray ( ; & |
    for (auto& x : *w) words.push_back(std::move(x));
  }
  auto& arr = st_.arrays[name];
  if (!append) arr.clear();
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
  Command cur;
  bool at_start = true, assign_cmd = false;
  auto end_command = [&]() -> Status {
    if (!cur.empty() && (cur[0].text == "source" || cur[0].text == ".")) GPUPLAN_RETURN_IF_ERROR(Source(cur));
    else if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
    at_start = true;
    assign_cmd = false;
    return Status::Ok();
  };
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
      std::vector<Word> value;
      if (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_]))) {
        // the value is one word (no splitting)
        const size_t before = i_;
        auto w = ReadWord();
        if (!w.ok()) return w.status();
        std::string text, why;
        for (size_t k = 0; k < w->size(); ++k) {
          text += (k ? " " : "") + (*w)[k].text;
          if (why.empty()) why = (*w)[k].unresolved;
        }
        if (w->empty() && i_ == before) ++i_;
        Word v{append && st_.vars.count(name) ? st_.vars[name].text + text : text, line, why};
        st_.vars[name] = v;
      } else {
        st_.vars[name] = Word{"", line, ""};
      }
      continue;
    }
    const size_t before = i_;
    auto words = ReadWord();
    if (!words.ok()) return words.status();
    if (i_ == before) ++i_;  // a character no rule takes
    if (at_start && !words->empty()) {
      const std::string& first = (*words)[0].text;
      assign_cmd = first == "export" || first == "declare" || first == "local" || first == "readonly" || first == "typeset";
    }
    if (!words->empty()) at_start = false;
    for (auto& w : *words) cur.push_back(std::move(w));
  }
  return end_command();
}


}  // namespace gpuplan::import_detail
