// The shell reader of gpuplan import: the words of a launch script as bash builds them, for the
// constructs launch scripts use (docs/export.md "Import: shell scripts"):
//   NAME=value, export/declare/local NAME=value, arrays NAME=( ... ) and NAME+=( ... );
//   $NAME, ${NAME}, ${NAME:-word} ${NAME-word} ${NAME:=word} ${NAME:+word} (the word with bash's quote
//   removal), ${#NAME}, ${ARR[@]} ${ARR[*]} ${ARR[i]} ${#ARR[@]}, $(( arithmetic )), $(dirname "$0");
//   unquoted expansions are split into words at blanks as bash does, quoted ones are not, and
//   "${ARR[@]}" keeps each element one word;
//   `\` continuations, quotes, comments, `source FILE`;
//   if / elif / else / fi: the branch the values select when the test is decidable ([ ], [[ ]], test:
//   -z -n = == != -eq -ne -lt -le -gt -ge, !, && ||); files a test names are taken as present; an
//   undecidable test reads the first branch with a note.
// Anything it cannot know (an environment variable, a command's output) is kept as an unresolved word.
// Bounded: input size, nesting of ${ } defaults and $(( )), the size of every value and array.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan::import_detail {

struct Word {
  std::string text;
  int line = 0;
  std::string unresolved;  // why the value is unknown ("" = known)
};
using Command = std::vector<Word>;

struct ShellState {
  std::map<std::string, Word> vars;
  std::map<std::string, std::vector<Word>> arrays;
  std::vector<std::string> array_order;  // arrays defined by the file read itself (not by sourced files)
  int64_t value_bytes = 0;               // bytes of every value assigned (bounded: kMaxShellValueBytes)
};

inline constexpr size_t kMaxShellTextBytes = 4 << 20;       // a launch script is kilobytes
inline constexpr size_t kMaxShellValueBytes = 1 << 20;      // one variable's value, one word
inline constexpr int64_t kMaxShellTotalBytes = 16 << 20;    // every value assigned in one file
inline constexpr size_t kMaxShellArrayWords = 100000;       // words of one array
inline constexpr int kMaxShellNesting = 64;                 // ${X:-${Y:-...}}, $(( ((...)) )), if in if

// The words of one shell word being built (field splitting and quote removal as bash does them).
class Fields {
 public:
  explicit Fields(int line, bool split) : split_(split) { cur_.line = line; }
  void Literal(const std::string& s, bool quoted);   // text, not split
  void Split(const std::string& s);                  // the result of an unquoted expansion
  void Break(bool force);                            // a word ends here (force: even an empty one)
  void Unresolved(const std::string& why) {
    if (cur_.unresolved.empty()) cur_.unresolved = why;
  }
  std::vector<Word> Take();
  bool splits() const { return split_; }
  size_t size_bytes() const { return bytes_; }
  void LineHint(int line) {  // a word that starts here comes from this line (an array element's own)
    if (!have_ && line > 0) cur_.line = line;
  }
  void Array() { ++arrays_; }  // a "${ARR[@]}" was expanded (an empty one makes no word)
  size_t pieces() const { return pieces_; }
  size_t arrays() const { return arrays_; }

 private:
  std::vector<Word> out_;
  Word cur_;
  bool have_ = false;  // the current word exists (text or a quote)
  bool split_;         // false in an assignment's value: no word splitting
  size_t bytes_ = 0;
  size_t pieces_ = 0, arrays_ = 0;
};

class ShellReader {
 public:
  ShellReader(const std::string& text, const std::string& file, ShellState& st, int depth, bool own_file)
      : s_(text), file_(file), st_(st), depth_(depth), own_(own_file) {}

  Status Read(std::vector<Command>& out);
  std::vector<std::pair<Location, std::string>> notes;  // sourced files not found, branches guessed, ...

 private:
  struct IfFrame {
    bool parent_active = true;
    bool taken = false;   // a branch was taken (or guessed)
    bool active = false;  // the current branch is read
  };
  ShellReader(const std::string& text, const ShellReader& parent, int nesting)
      : s_(text), file_(parent.file_), st_(parent.st_), depth_(parent.depth_), own_(parent.own_), line_(parent.line_),
        nesting_(nesting) {}
  Status Fail(const std::string& why, int line) { return Status::BadInput({file_, line, ""}, why); }
  Result<std::vector<Word>> ReadWord(bool split = true);
  Status ReadWordInto(Fields& f, bool top_level, bool dq);
  Status ReadDoubleQuoted(Fields& f);
  Status Expand(Fields& f, bool quoted);
  Status ExpandArith(Fields& f, bool quoted);    // $(( ... ))
  Status ExpandCommand(Fields& f, bool quoted);  // $( ... )
  Status ExpandBraces(Fields& f, bool quoted);   // ${ ... }
  Status ExpandDefault(Fields& f, const std::string& word, bool quoted);
  Result<std::string> Enclosed(char open, char close);
  void Scalar(Fields& f, const Word& w, bool quoted);
  std::optional<Word> Var(const std::string& name) const;
  Word VarOrUnset(const std::string& name) const;
  Status Assign(const std::string& name, Word value, bool append);
  Status ReadArray(const std::string& name, bool append);
  bool AssignmentAt(std::string& name, bool& append, bool& array) const;
  void SkipRedirection();
  Status Source(const Command& cmd);
  bool Active() const { return ifs_.empty() || ifs_.back().active; }
  Status Keyword(Command& cmd, bool& consumed);
  Status BranchWord(const Word& w, bool& keyword);
  std::optional<bool> Test(const Command& cmd, size_t from, std::string& why) const;

  const std::string& s_;
  std::string file_;
  ShellState& st_;
  int depth_;
  bool own_;
  size_t i_ = 0;
  int line_ = 1;
  int nesting_ = 0;
  std::vector<IfFrame> ifs_;
};

// Integer arithmetic of $(( )) over numbers (variables substituted): + - * / % and parentheses,
// unary - and +; nullopt for anything else, an overflow, a division by zero or nesting past the bound.
std::optional<int64_t> EvalArith(const std::string& text);

}  // namespace gpuplan::import_detail
