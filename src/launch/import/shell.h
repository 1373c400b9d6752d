// The shell reader of gpuplan import: the words of a launch script as bash would build them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan::import_detail {

// ---- shell text: a launch line or a Megatron command, in a .sh file or a text file ----
// A small reader of the shell a launch script uses: words with their lines, `\` continuations,
// quotes, comments, NAME=value and NAME=( ... ) arrays, $NAME / ${NAME:-default} / ${ARR[@]},
// $((arithmetic)), $(dirname "$0") (the file's directory) and `source FILE`. Anything it cannot
// know (an environment variable, a command's output) is kept as an unresolved word.

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
};

class ShellReader {
 public:
  ShellReader(const std::string& text, const std::string& file, ShellState& st, int depth, bool own_file)
      : s_(text), file_(file), st_(st), depth_(depth), own_(own_file) {}

  Status Read(std::vector<Command>& out);
  std::vector<std::pair<Location, std::string>> notes;  // sourced files not found, ...

 private:
  struct Exp {
    std::string text;
    std::string unresolved;
    bool is_array = false;
    std::vector<Word> words;
  };
  Status Fail(const std::string& why, int line) { return Status::BadInput({file_, line, ""}, why); }
  Result<std::vector<Word>> ReadWord();
  Result<Exp> Expand(bool quoted);
  Result<Exp> ExpandArith();    // $(( ... ))
  Result<Exp> ExpandCommand();  // $( ... )
  Result<Exp> ExpandBraces();   // ${ ... }
  Result<std::string> Enclosed(char open, char close, int& lines);
  Exp Var(const std::string& name) const;
  std::string ExpandSimple(const std::string& text, std::string& unresolved) const;
  Status ReadArray(const std::string& name, bool append);
  bool AssignmentAt(std::string& name, bool& append, bool& array) const;
  void SkipRedirection();
  Status Source(const Command& cmd);

  const std::string& s_;
  std::string file_;
  ShellState& st_;
  int depth_;
  bool own_;
  size_t i_ = 0;
  int line_ = 1;
};

}  // namespace gpuplan::import_detail
