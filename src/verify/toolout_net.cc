// nccl-tests (and rccl-tests), perftest and NCCL_DEBUG=INFO logs (docs/checks.md "Reading outputs").
#include <algorithm>
#include <cmath>
#include <set>

#include "toolout_internal.h"

namespace gpuplan::toolout {

namespace {

// A pasted line as the tool printed it: markdown quoting and mpirun/srun rank prefixes removed.
std::string Clean(const std::string& s) { return StripRankPrefix(StripMarkdown(s)); }

// "[0]" rank tags that mpirun glued into a row ("-1[0]    1626.5") become blanks.
std::string StripRankTags(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') {
      size_t j = i + 1;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i + 1 && j < s.size() && s[j] == ']') {
        out += ' ';
        i = j;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// Where a result row's data type sits: the first non-number token, after two integers (size, count).
// Columns a user put in front of the size shift it right; 0 when the tokens are not a row.
size_t RowTypeIndex(const std::vector<std::string>& tok) {
  for (size_t i = 0; i < tok.size() && i < 6; ++i) {
    if (Number(tok[i])) continue;
    if (i >= 2 && Integer(tok[i - 2]) && Integer(tok[i - 1]) && std::isalpha(static_cast<unsigned char>(tok[i][0])) && tok.size() >= i + 9) return i;
    return 0;
  }
  return 0;
}

bool IsNcclTestsHeader(const std::string& stripped) {
  const std::string t = Trim(stripped);
  if (!StartsWith(t, "#")) return false;
  auto tok = Tokens(t.substr(1));
  return std::find(tok.begin(), tok.end(), "size") != tok.end() && std::find(tok.begin(), tok.end(), "busbw") != tok.end();
}

}  // namespace

// The header, the summary, the preamble ("# nThread 1 nGpus 8 ...") or two result rows by their shape
// (a paste without its column header, with rank prefixes or markdown quoting).
bool LooksLikeNcclTests(const std::vector<Line>& lines) {
  int rows = 0;
  for (const auto& l : lines) {
    if (l.text.size() > 4096) continue;
    const std::string s = Clean(l.text);
    const std::string t = Trim(s);
    if (IsNcclTestsHeader(s) || Contains(t, "# Avg bus bandwidth")) return true;
    if (StartsWith(t, "# nThread") && Contains(t, "nGpus")) return true;
    if (!StartsWith(t, "#") && !Contains(t, "NCCL INFO") && RowTypeIndex(Tokens(StripRankTags(t))) > 0 && ++rows >= 2) return true;
  }
  return false;
}

// ---- NCCL_DEBUG=INFO lines (in a log, or inside an nccl-tests output) ----

namespace {

struct NcclLogState {
  std::map<std::string, std::pair<int, int>> channels;  // transport -> (count, first line)
  std::set<std::string> hosts;
  int nvls_devices = 0, nvls_line = 0;
  std::optional<std::pair<long long, int>> nodes, ranks;  // value, line
  std::map<std::string, std::string> info;             // last "key" seen
};

// "H20-GPU-06:4015539:4015652 [0] NCCL INFO ..." -> "H20-GPU-06"
std::string HostOf(const std::string& line) {
  auto p = line.find(" NCCL ");
  if (p == std::string::npos) return "";
  std::string head = Trim(line.substr(0, p));
  auto c = head.find(':');
  if (c == std::string::npos || c == 0) return "";
  return head.substr(0, c);
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eno1:..." -> {"mlx5_0:1/IB", "mlx5_1:1/IB"}
std::vector<std::string> NetDevices(const std::string& rest) {
  std::vector<std::string> out;
  const std::string head = rest.substr(0, rest.find("; OOB"));
  for (const auto& t : Tokens(head)) {
    if (t.size() > 3 && t[0] == '[' && std::isdigit(static_cast<unsigned char>(t[1]))) {
      auto e = t.find(']');
      if (e != std::string::npos && e + 1 < t.size()) out.push_back(t.substr(e + 1));
    }
  }
  return out;
}

void NcclLogLine(const Line& raw, Builder& b, NcclLogState& st) {
  const Line l{raw.number, Clean(raw.text)};
  const std::string& s = l.text;
  if (std::string h = HostOf(s); !h.empty()) st.hosts.insert(h);
  // "NET/IB : Using [0]mlx5_0:1/IB ...", "NET/Socket : Using [0]eth0:...", "NET/FastSocket : Using ..."
  if (auto p = s.find("NET/"); p != std::string::npos && Contains(s, " : Using ")) {
    const std::string net = Trim(s.substr(p, s.find(" : Using", p) - p));
    const auto devs = NetDevices(s.substr(s.find(" : Using") + 8));
    Reading& r = b.AddState("transport", net, l.number);
    std::string list;
    for (const auto& d : devs) list += (list.empty() ? "" : ",") + d;
    r.context["devices"] = list;
    if (Contains(s, "[RO]")) r.context["relaxed_ordering"] = "yes";
    Reading& n = b.Add("net_devices", static_cast<double>(devs.size()), "count", l.number);
    n.context["net"] = net;
    return;
  }
  if (auto p = s.find("Selected Provider is "); p != std::string::npos) {
    b.AddState("transport", "NET/OFI/" + Trim(s.substr(p + 21)), l.number);
    return;
  }
  if (auto p = s.find("Using network "); p != std::string::npos) {
    b.AddState("network_selected", Trim(s.substr(p + 14)), l.number);
    return;
  }
  // "Channel 07/0 : 0[0] -> 2[0] [receive] via NET/IB/3/GDRDMA", "via P2P/CUMEM", "via P2P/direct pointer", "via SHM"
  if (auto p = s.find(" via "); p != std::string::npos && Contains(s, "Channel")) {
    std::string via = Trim(s.substr(p + 5));
    std::string kind;
    if (StartsWith(via, "NET/")) {
      auto parts = SplitList(via, '/');  // NET, IB, 3, GDRDMA
      kind = "NET/" + (parts.size() > 1 ? parts[1] : "?");
      if (Contains(via, "GDRDMA")) kind += "/GDRDMA";
    } else {
      kind = via;
    }
    auto& c = st.channels[kind];
    if (c.first++ == 0) c.second = l.number;
    return;
  }
  if (auto p = s.find("use ring PXN"); p != std::string::npos) {
    if (auto g = s.find(" GDR "); g != std::string::npos)
      if (auto v = Integer(Tokens(s.substr(g + 5)).empty() ? "" : Tokens(s.substr(g + 5))[0])) b.Add("gdr_enabled", *v != 0, "bool", l.number);
    return;
  }
  if (Contains(s, "NVLS multicast support is available")) {
    if (st.nvls_devices++ == 0) st.nvls_line = l.number;
    return;
  }
  if (auto p = s.find(" nvls channels"); p != std::string::npos) {
    auto before = Tokens(s.substr(0, p));
    if (!before.empty())
      if (auto v = Integer(before.back())) b.Add("nvls_channels", static_cast<double>(*v), "count", l.number);
    return;
  }
  if (auto p = s.find(" nranks "); p != std::string::npos && !Contains(s, " nNodes ")) {  // "comm 0x.. rank 0 nranks 16 cudaDev 0 ..."
    auto t = Tokens(s.substr(p + 8));
    if (!t.empty())
      if (auto v = Integer(t[0])) st.ranks = {*v, l.number};
    return;
  }
  if (auto p = s.find(" nNodes "); p != std::string::npos) {
    auto t = Tokens(s.substr(p + 8));
    if (!t.empty())
      if (auto v = Integer(t[0])) st.nodes = {*v, l.number};
    if (auto q = s.find(" nRanks "); q != std::string::npos) {
      auto r = Tokens(s.substr(q + 8));
      if (!r.empty())
        if (auto v = Integer(r[0])) st.ranks = {*v, l.number};
    }
    return;
  }
  // "NCCL WARN NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len"
  if (auto p = s.find("NCCL WARN"); p != std::string::npos) {
    const std::string msg = Trim(s.substr(p + 9));
    if (auto e = msg.find("with error "); e != std::string::npos && Contains(msg, "completion")) {
      auto t = Tokens(msg.substr(e + 11));
      std::string code = t.empty() ? "" : t[0];
      if (!code.empty() && code.back() == ',') code.pop_back();
      Reading& r = b.Add("ib_completion_error", Number(code).value_or(-1), "code", l.number);
      r.text = msg;
      if (auto q = msg.find("from peer "); q != std::string::npos)
        if (auto t2 = Tokens(msg.substr(q + 10)); !t2.empty()) r.context["peer"] = t2[0];
      return;
    }
    b.AddState("nccl_warn", msg, l.number);
  }
}

void FinishNcclLog(Builder& b, const NcclLogState& st) {
  for (const auto& [kind, c] : st.channels) {
    Reading& r = b.Add("channel_transport", c.first, "count", c.second);
    r.text = kind;
  }
  if (st.nvls_devices > 0) b.Add("nvls_multicast_devices", st.nvls_devices, "count", st.nvls_line);
  if (st.nodes) b.Add("nccl_nodes", static_cast<double>(st.nodes->first), "count", st.nodes->second);
  if (st.ranks) b.Add("nccl_ranks", static_cast<double>(st.ranks->first), "count", st.ranks->second);
  if (st.hosts.size() > 1) {
    std::string list;
    for (const auto& h : st.hosts) list += (list.empty() ? "" : ",") + h;
    Reading& r = b.Add("log_hosts", static_cast<double>(st.hosts.size()), "count", 0);
    r.context["hosts"] = list;
  }
}

}  // namespace

bool LooksLikeNcclDebug(const std::vector<Line>& lines) {
  for (const auto& l : lines)
    if (Contains(l.text, "NCCL INFO") || Contains(l.text, "NCCL WARN")) return true;
  return false;
}

void ParseNcclDebug(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nccl";
  NcclLogState st;
  for (const auto& l : lines)
    if (Contains(l.text, "NCCL INFO") || Contains(l.text, "NCCL WARN")) NcclLogLine(l, b, st);
  FinishNcclLog(b, st);
}

// ---- nccl-tests ----

namespace {

struct NcclRow {
  int line = 0, run = 0;
  double bytes = 0, busbw_oop = 0, busbw_ip = 0, algbw_oop = 0, algbw_ip = 0;
  std::string wrong_oop, wrong_ip;
  size_t lead_columns = 0;  // columns in front of the size (a user-edited table)
  size_t after_type = 0;    // fields after the data type in a whole row (redop/root, then 2 x 4)
  bool rooted = false;      // a root column >= 0 (broadcast, reduce, ...); all-rank collectives print -1
};

// size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong: the size and count are the
// two integers before the data type; the rest is read from the right, since alltoall's empty redop and
// the old format's missing root shift the middle columns.
std::optional<NcclRow> ReadNcclRow(const std::vector<std::string>& tok, int line, std::string* why) {
  const size_t ti = RowTypeIndex(tok);
  if (ti == 0) {
    *why = "row has " + std::to_string(tok.size()) + " fields, a result row has size, count, type and 8 or more after them (cut short?)";
    return std::nullopt;
  }
  const size_t n = tok.size();
  auto num = [&](size_t i) { return Number(tok[i]); };
  auto b = Integer(tok[ti - 2]), c = Integer(tok[ti - 1]);
  auto t1 = num(n - 8), a1 = num(n - 7), bb1 = num(n - 6), t2 = num(n - 4), a2 = num(n - 3), bb2 = num(n - 2);
  if (!b || !c || !t1 || !a1 || !bb1 || !t2 || !a2 || !bb2) {
    *why = "a size, time or bandwidth field is not a number";
    return std::nullopt;
  }
  NcclRow r;
  r.line = line;
  r.bytes = static_cast<double>(*b);
  r.algbw_oop = *a1, r.busbw_oop = *bb1, r.algbw_ip = *a2, r.busbw_ip = *bb2;
  r.wrong_oop = tok[n - 5], r.wrong_ip = tok[n - 1];
  r.lead_columns = ti - 2;
  r.after_type = n - ti - 1;
  if (n - 9 > ti)
    if (auto root = Integer(tok[n - 9])) r.rooted = *root >= 0;
  return r;
}

// A last row cut inside its in-place half ("... 36943 116.26 116.26 0 36917 116.34"): when the whole rows
// before it had the same columns, its out-of-place half (time, algbw, busbw, #wrong) is complete; read that.
std::optional<NcclRow> ReadCutNcclRow(const std::vector<std::string>& tok, const NcclRow& prev, int line) {
  const size_t ti = RowTypeIndex(tok);
  if (ti == 0 || prev.after_type < 8 || ti - 2 != prev.lead_columns) return std::nullopt;
  const size_t t1 = ti + 1 + (prev.after_type - 8);  // the out-of-place time
  if (tok.size() < t1 + 4 || tok.size() >= ti + 1 + prev.after_type) return std::nullopt;
  auto b = Integer(tok[ti - 2]);
  auto time = Number(tok[t1]), a1 = Number(tok[t1 + 1]), bb1 = Number(tok[t1 + 2]);
  if (!b || !Integer(tok[ti - 1]) || !time || !a1 || !bb1) return std::nullopt;
  NcclRow r;
  r.line = line;
  r.bytes = static_cast<double>(*b);
  r.algbw_oop = *a1, r.busbw_oop = *bb1;
  r.wrong_oop = tok[t1 + 3];
  r.lead_columns = prev.lead_columns;
  r.after_type = prev.after_type;
  return r;
}

// all_reduce_perf -> all_reduce (from "Collective test starting: X", a command line or a path).
std::string OpFromText(const std::string& s) {
  for (const auto& t : Tokens(s)) {
    auto p = t.find("_perf");
    if (p == std::string::npos) continue;
    std::string name = t.substr(0, p);
    if (auto slash = name.find_last_of("/="); slash != std::string::npos) name = name.substr(slash + 1);
    static const char* kOps[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce", "gather", "scatter", "hypercube"};
    for (const char* op : kOps)
      if (name == op) return name;
  }
  return "";
}

// nccl-tests' bus factor (doc/PERFORMANCE.md): busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for
// reduce_scatter/all_gather/alltoall, x 1 for sendrecv/broadcast/reduce. When the output does not name
// the test, the factor seen in its rows (and the redop column: sum only for reductions) says which.
struct OpGuess {
  std::string op, why;
  long long ranks = 0;
};

OpGuess InferOp(const std::vector<NcclRow>& rows, long long ranks, bool has_sum) {
  std::vector<double> f;
  for (const auto& r : rows)
    if (r.algbw_oop >= 0.5 && r.busbw_oop > 0) f.push_back(r.busbw_oop / r.algbw_oop);
  if (f.empty()) return {};
  std::sort(f.begin(), f.end());
  const double k = f[f.size() / 2];
  const std::string fs = Num(std::round(k * 1000) / 1000);
  // A root column (>= 0) with factor 1: broadcast, or reduce when the rows carry a sum reduction.
  if (std::abs(k - 1) <= 0.02 && std::all_of(rows.begin(), rows.end(), [](const NcclRow& r) { return r.rooted; }))
    return {has_sum ? "reduce" : "broadcast", "bus factor 1 and a root column" + std::string(has_sum ? " with a sum reduction" : ", no reduction"), ranks};
  const std::string reduce_kind = has_sum ? "reduce_scatter" : "all_gather_or_alltoall";
  if (ranks == 0) {
    // Solve the factor for n; above 16 ranks neighbouring n differ by less than the printed digits.
    auto solve = [&](double n) -> long long { return n <= 16.5 && std::abs(n - std::round(n)) < 0.05 * n ? std::llround(n) : 0; };
    if (k > 1.02 && k < 2.001) {
      const long long n = k < 1.999 ? solve(2 / (2 - k)) : 0;
      return {"all_reduce", "bus factor " + fs + " = 2(n-1)/n" + (n ? " with n = " + std::to_string(n) : ", between 1 and 2: only all_reduce's is"), n};
    }
    if (k > 0 && k < 0.98) {
      const long long n = solve(1 / (1 - k));
      return {reduce_kind, "bus factor " + fs + " = (n-1)/n" + (n ? " with n = " + std::to_string(n) : "") + (has_sum ? " and a sum reduction" : ", no reduction"), n};
    }
    return {};  // factor 1: all_reduce on 2 ranks or sendrecv; the output does not say which
  }
  if (ranks < 2) return {};
  const double n = static_cast<double>(ranks);
  auto near = [&](double x) { return std::abs(k - x) <= 0.02 * x; };
  const std::string with = " with n = " + std::to_string(ranks);
  if (near(2 * (n - 1) / n) && !near(1)) return {"all_reduce", "bus factor " + fs + " = 2(n-1)/n" + with, ranks};
  if (near((n - 1) / n)) return {reduce_kind, "bus factor " + fs + " = (n-1)/n" + with + (has_sum ? " and a sum reduction" : ", no reduction"), ranks};
  if (near(1) && !near(2 * (n - 1) / n)) return {"sendrecv_or_broadcast", "bus factor 1" + with, ranks};
  return {};
}

}  // namespace

namespace {

// Stage 1 of an nccl-tests output: what its lines say (header, rank lines, rows, summary, NCCL INFO).
struct NcclScan {
  std::string op, variant = "nccl-tests", gpu_name, ranks_from;
  std::set<std::string> hosts;
  long long max_rank = -1, slurm_ntasks = 0, ngpus = 0, rank_lines = 0;
  long long launcher_procs = 0, launcher_per_node = 0, launcher_nodes = 0, test_gpus = 0, test_threads = 0;
  bool old_format = false, in_table = false, summary_after_rows = false, has_sum = false;
  int header_line = 0, launcher_line = 0;
  std::vector<NcclRow> rows;
  std::vector<double> run_last_bytes;  // the last size of each run seen so far (rows of several runs may interleave)
  int runs_before_header = 0;          // runs closed by a later header (a second table)
  bool warned_runs = false;
  NcclLogState log;
};

// "mpirun -np 2 ... ./all_reduce_perf -b 8 -e 1G -g 1" / "srun -N 2 -n 16 ...": the processes, per node, nodes,
// and the test's own -g (GPUs per thread) and -t (threads per process).
void ScanNcclCommand(const Line& l, const std::string& t, NcclScan& sc) {
  const auto tok = Tokens(t);
  const bool mpi = std::any_of(tok.begin(), tok.end(), [](const std::string& x) { return Contains(x, "mpirun") || Contains(x, "mpiexec"); });
  const bool srun = std::any_of(tok.begin(), tok.end(), [](const std::string& x) { return x == "srun" || Contains(x, "/srun"); });
  bool after_test = false;
  for (size_t i = 0; i + 1 < tok.size(); ++i) {
    if (Contains(tok[i], "_perf")) after_test = true;
    auto v = Integer(tok[i + 1]);
    if (!v || *v <= 0 || *v > 1000000) continue;
    const std::string& f = tok[i];
    if (after_test) {
      if (f == "-g" || f == "--ngpus") sc.test_gpus = *v;
      if (f == "-t" || f == "--nthreads") sc.test_threads = *v;
    } else if (mpi) {
      if (f == "-np" || f == "-n" || f == "--np" || f == "-c") sc.launcher_procs = *v, sc.launcher_line = l.number;
      if (f == "-npernode" || f == "--npernode" || f == "-N" || f == "--per-node") sc.launcher_per_node = *v;
    } else if (srun) {
      if (f == "-n" || f == "--ntasks") sc.launcher_procs = *v, sc.launcher_line = l.number;
      if (f == "-N" || f == "--nodes") sc.launcher_nodes = *v, sc.launcher_line = l.number;
      if (f == "--ntasks-per-node") sc.launcher_per_node = *v;
    }
  }
  if (!mpi && !srun && after_test && sc.launcher_line == 0) sc.launcher_line = l.number;
}

// A row joins the run whose last size is the largest one below its own (nccl-tests never repeats a size
// within a run): rows of two interleaved outputs, or a second table, start a new run.
void AddNcclRow(NcclRow row, Builder& b, NcclScan& sc) {
  int best = -1;
  // Sizes below one element per rank print as 0, several times at the start of one run: a repeated 0 is
  // not a new run.
  for (size_t i = static_cast<size_t>(sc.runs_before_header); i < sc.run_last_bytes.size() && row.bytes == 0; ++i)
    if (sc.run_last_bytes[i] == 0) best = static_cast<int>(i);
  const bool repeated_zero = best >= 0;
  for (size_t i = static_cast<size_t>(sc.runs_before_header); !repeated_zero && i < sc.run_last_bytes.size(); ++i)
    if (sc.run_last_bytes[i] < row.bytes && (best < 0 || sc.run_last_bytes[i] > sc.run_last_bytes[static_cast<size_t>(best)])) best = static_cast<int>(i);
  if (best < 0) {
    if (sc.run_last_bytes.size() > static_cast<size_t>(sc.runs_before_header) && !sc.warned_runs) {
      b.Warn(row.line, "size " + Num(row.bytes) + " after " + Num(sc.rows.back().bytes) +
                           ": the rows of another run start or interleave here (several outputs in one log); each run read on its own");
      sc.warned_runs = true;
    }
    sc.run_last_bytes.push_back(row.bytes);
    best = static_cast<int>(sc.run_last_bytes.size()) - 1;
  }
  sc.run_last_bytes[static_cast<size_t>(best)] = row.bytes;
  row.run = best;
  if (row.lead_columns > 0 && (sc.rows.empty() || sc.rows.back().lead_columns == 0))
    b.Warn(row.line, std::to_string(row.lead_columns) + " column(s) in front of the size (a table edited by hand): size and count read as the two "
                     "integers before the data type");
  sc.rows.push_back(row);
}

// A "#" line: nThread/nGpus, "# Rank N ... on HOST device D [bus] NAME", the summary lines.
void ScanNcclComment(const Line& l, const std::string& t, Builder& b, NcclScan& sc) {
  auto tok = Tokens(t.substr(1));
  if (tok.size() >= 4 && tok[0] == "nThread")
    for (size_t i = 0; i + 1 < tok.size(); ++i)
      if (tok[i] == "nGpus") sc.ngpus = Integer(tok[i + 1]).value_or(0);
  if (tok.size() >= 6 && tok[0] == "Rank") {
    sc.max_rank = std::max(sc.max_rank, Integer(tok[1]).value_or(-1));
    ++sc.rank_lines;
    for (size_t i = 0; i + 1 < tok.size(); ++i)
      if (tok[i] == "on") sc.hosts.insert(tok[i + 1]);
    if (auto br = t.find(']'); br != std::string::npos && !Trim(t.substr(br + 1)).empty()) sc.gpu_name = Trim(t.substr(br + 1));
  }
  if (Contains(t, "Avg bus bandwidth")) {
    auto v = Number(Trim(t.substr(t.find(':') + 1)));
    if (v) b.Add("busbw_avg_gb_per_s", *v, "GB/s", l.number);
    else b.Warn(l.number, "'Avg bus bandwidth' without a number");
    if (!sc.rows.empty()) sc.summary_after_rows = true;
  }
  if (Contains(t, "Out of bounds values")) {
    auto tok2 = Tokens(t.substr(t.find(':') + 1));
    if (!tok2.empty())
      if (auto v = Integer(tok2[0])) b.Add("out_of_bounds_values", static_cast<double>(*v), "count", l.number);
    if (!sc.rows.empty()) sc.summary_after_rows = true;
  }
}

// One line of the table part: a row (by its shape), a cut row, an excerpt mark.
void ScanNcclTableLine(const Line& l, const std::string& t, Builder& b, NcclScan& sc) {
  if (StartsWith(t, "...")) {
    b.Warn(l.number, "'...': rows left out of this output (an excerpt); peak and average are of the rows shown");
    return;
  }
  const auto tok = Tokens(StripRankTags(t));
  if (tok.empty() || !Integer(tok[0])) return;  // a stray log line inside the table
  if (RowTypeIndex(tok) == 0 && !sc.in_table && sc.rows.empty()) return;  // not a row, no table yet
  std::string why;
  auto row = ReadNcclRow(tok, l.number, &why);
  if (!row && !sc.rows.empty())
    if ((row = ReadCutNcclRow(tok, sc.rows.back(), l.number)))
      b.Warn(l.number, "row cut inside its in-place half: its out-of-place half read, the rest is missing");
  if (!row) {
    b.Warn(l.number, why + "; read " + std::to_string(sc.rows.size()) + " row(s) up to it");
    return;
  }
  AddNcclRow(*row, b, sc);
  for (size_t i = RowTypeIndex(tok); i + 8 < tok.size(); ++i) sc.has_sum = sc.has_sum || tok[i] == "sum";
}

NcclScan ScanNcclTests(const std::vector<Line>& lines, Builder& b) {
  NcclScan sc;
  for (const auto& l : lines) {
    if (l.text.size() > 4096) {
      b.Warn(l.number, "a line of " + std::to_string(l.text.size()) + " characters: no tool prints one; not read");
      continue;
    }
    if (Contains(l.text, "NCCL INFO") || Contains(l.text, "NCCL WARN")) {
      NcclLogLine(l, b, sc.log);
      continue;
    }
    const std::string s = Clean(l.text);
    const std::string t = Trim(s);
    if (sc.op.empty()) sc.op = OpFromText(t);
    if (Contains(t, "_perf") && !StartsWith(t, "#")) ScanNcclCommand(l, t, sc);
    if (Contains(t, "rccl-tests") || Contains(t, "rcccl-tests")) sc.variant = "rccl-tests";
    if (StartsWith(t, "SLURM_NTASKS=")) sc.slurm_ntasks = Integer(t.substr(13)).value_or(0);
    if (IsNcclTestsHeader(s)) {
      sc.old_format = !Contains(t, "#wrong");
      sc.in_table = true;
      sc.header_line = l.number;
      sc.runs_before_header = static_cast<int>(sc.run_last_bytes.size());  // a new table: its rows start new runs
      sc.warned_runs = false;
      continue;
    }
    if (StartsWith(t, "#")) {
      ScanNcclComment(l, t, b, sc);
      continue;
    }
    if (!t.empty()) ScanNcclTableLine(l, t, b, sc);
  }
  if (!sc.in_table && !sc.rows.empty()) {
    // No header: the old format has an error column where the current one has #wrong (an integer).
    sc.old_format = std::any_of(sc.rows.begin(), sc.rows.end(), [](const NcclRow& r) { return Contains(r.wrong_oop, "e-") || Contains(r.wrong_oop, "e+"); });
    b.Warn(sc.rows.front().line, "rows without their column header: read by their shape (size, count, type, ..., time, algbw, busbw, #wrong x 2)");
  }
  if (sc.rows.empty()) b.Warn(sc.header_line, sc.header_line ? "results header but no result row after it: the run stopped or the output was cut"
                                                             : "no result row: the test stopped before its first size, or the output was cut");
  else if (!sc.summary_after_rows)
    b.Warn(sc.rows.back().line, "no 'Out of bounds values' / 'Avg bus bandwidth' line after the last row: the output may be cut short here");
  return sc;
}

// Stage 2: one reading per size, the peak and the largest size of each run, #wrong (or the old error column).
void AddNcclRowReadings(Builder& b, const NcclScan& sc) {
  long long wrong = 0;
  double max_err = 0;
  bool have_wrong = false, have_err = false;
  int first_wrong_line = 0;
  auto bus = [](const NcclRow& r) { return std::max(r.busbw_oop, r.busbw_ip); };
  const size_t runs = sc.run_last_bytes.size();
  std::vector<const NcclRow*> peak(runs, nullptr), largest(runs, nullptr);
  for (const auto& r : sc.rows) {
    Reading& x = b.Add("busbw_gb_per_s", bus(r), "GB/s", r.line);
    x.context["msg_bytes"] = Num(r.bytes);
    if (runs > 1) x.context["run"] = std::to_string(r.run + 1);
    const size_t k = static_cast<size_t>(r.run);
    if (!peak[k] || bus(r) > bus(*peak[k])) peak[k] = &r;
    if (!largest[k] || r.bytes >= largest[k]->bytes) largest[k] = &r;
    for (const auto& w : {r.wrong_oop, r.wrong_ip}) {
      if (sc.old_format) {
        if (auto v = Number(w)) max_err = std::max(max_err, *v), have_err = true;
      } else if (auto v = Integer(w)) {
        have_wrong = true;
        if (*v != 0 && wrong == 0) first_wrong_line = r.line;
        wrong += *v;
      }
    }
  }
  for (size_t k = 0; k < runs; ++k) {
    if (!peak[k]) continue;
    auto tag = [&](Reading& x, const NcclRow& r) {
      x.context["msg_bytes"] = Num(r.bytes);
      if (runs > 1) x.context["run"] = std::to_string(k + 1) + " of " + std::to_string(runs);
    };
    tag(b.Add("busbw_peak_gb_per_s", bus(*peak[k]), "GB/s", peak[k]->line), *peak[k]);
    tag(b.Add("algbw_peak_gb_per_s", std::max(peak[k]->algbw_oop, peak[k]->algbw_ip), "GB/s", peak[k]->line), *peak[k]);
    tag(b.Add("busbw_at_max_msg_gb_per_s", bus(*largest[k]), "GB/s", largest[k]->line), *largest[k]);
    tag(b.Add("msg_bytes_max", largest[k]->bytes, "bytes", largest[k]->line), *largest[k]);
  }
  if (have_wrong) b.Add("wrong_total", static_cast<double>(wrong), "count", first_wrong_line ? first_wrong_line : sc.header_line);
  if (have_err) b.Add("validation_error_max", max_err, "abs", sc.header_line);
}

// Stage 3: the context every reading of the run shares (op, ranks, nodes, GPU, format).
// Ranks and nodes as the output states them: the "# Rank" lines, NCCL's nranks/nNodes, the launcher's
// -np / -N (times the test's -g and -t), SLURM_NTASKS; each with where it came from.
void NcclRanksNodes(const NcclScan& sc, long long* ranks, long long* nodes, std::string* from) {
  *ranks = 0, *nodes = 0;
  const long long per_proc = std::max<long long>(1, sc.test_gpus) * std::max<long long>(1, sc.test_threads);
  if (sc.log.ranks) *ranks = sc.log.ranks->first, *from = "NCCL nranks (line " + std::to_string(sc.log.ranks->second) + ")";
  else if (sc.max_rank >= 0) *ranks = sc.max_rank + 1, *from = "the '# Rank' lines";
  else if (sc.launcher_procs > 0) *ranks = sc.launcher_procs * per_proc, *from = "the command line (line " + std::to_string(sc.launcher_line) + ")";
  else if (sc.slurm_ntasks > 0) *ranks = sc.slurm_ntasks, *from = "SLURM_NTASKS";
  if (sc.ngpus > 1 && sc.ngpus > *ranks) *ranks = sc.ngpus, *from = "'# nThread ... nGpus'";
  // The hosts of the "# Rank" lines are the nodes only when every rank has its line (excerpts leave some out).
  *nodes = sc.log.nodes ? sc.log.nodes->first : 0;
  if (*nodes == 0 && sc.rank_lines > 0 && sc.rank_lines == *ranks) *nodes = static_cast<long long>(sc.hosts.size());
  if (*nodes == 0 && sc.launcher_nodes > 0) *nodes = sc.launcher_nodes;
  if (*nodes == 0 && sc.launcher_procs > 0 && sc.launcher_per_node > 0) *nodes = (sc.launcher_procs + sc.launcher_per_node - 1) / sc.launcher_per_node;
  if (*nodes == 0 && sc.ngpus > 0 && *ranks == sc.ngpus) *nodes = 1;  // one process drives every rank
  if (*nodes == 0 && sc.launcher_procs == 1 && per_proc == *ranks && *ranks > 0) *nodes = 1;
}

void AddNcclRunContext(ToolOutput& out, const NcclScan& sc) {
  long long ranks = 0, nodes = 0;
  std::string ranks_from;
  NcclRanksNodes(sc, &ranks, &nodes, &ranks_from);
  const long long nodes_seen = std::max<long long>(static_cast<long long>(sc.hosts.size()), static_cast<long long>(sc.log.hosts.size()));
  OpGuess guess;
  if (sc.op.empty()) guess = InferOp(sc.rows, ranks, sc.has_sum);
  if (ranks == 0 && guess.ranks > 0) ranks = guess.ranks, ranks_from = "the bus factor of the rows";
  out.tool = sc.op.empty() ? sc.variant : sc.op + "_perf";
  for (auto& r : out.readings) {
    r.tool = out.tool;
    r.context["op"] = !sc.op.empty() ? sc.op : !guess.op.empty() ? guess.op : "unknown";
    if (sc.op.empty() && !guess.op.empty()) r.context["op_from"] = guess.why;
    r.context["variant"] = sc.variant;
    if (ranks > 0) r.context["ranks"] = std::to_string(ranks), r.context["ranks_from"] = ranks_from;
    if (nodes > 0) r.context["nodes"] = std::to_string(nodes);
    else if (nodes_seen > 1) r.context["nodes_at_least"] = std::to_string(nodes_seen);
    if (sc.ngpus > 0) r.context["gpus_per_process"] = std::to_string(sc.ngpus);
    if (!sc.gpu_name.empty()) r.context["gpu_name"] = sc.gpu_name;
    r.context["format"] = sc.old_format ? "old (error column)" : "current (#wrong column)";
  }
}

}  // namespace

void ParseNcclTests(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nccl-tests";
  const NcclScan sc = ScanNcclTests(lines, b);
  AddNcclRowReadings(b, sc);
  FinishNcclLog(b, sc.log);
  AddNcclRunContext(out, sc);
}

// ---- perftest ----

namespace {

// The program from its banner line.
std::string PerftestTool(const std::string& banner) {
  const bool lat = Contains(banner, "Latency Test");
  if (Contains(banner, "RDMA_Write")) return lat ? "ib_write_lat" : "ib_write_bw";
  if (Contains(banner, "RDMA_Read")) return lat ? "ib_read_lat" : "ib_read_bw";
  if (Contains(banner, "Send")) return lat ? "ib_send_lat" : "ib_send_bw";
  if (Contains(banner, "Atomic")) return lat ? "ib_atomic_lat" : "ib_atomic_bw";
  return lat ? "perftest latency" : "perftest bandwidth";
}

bool IsPerftestBanner(const std::string& t) {
  return (Contains(t, " BW Test") || Contains(t, " Latency Test")) &&
         (Contains(t, "RDMA_") || Contains(t, "Send") || Contains(t, "Atomic"));
}

// Segments split at runs of 2+ blanks; "key : value" inside one, or "key" then ": value".
void ReadPerftestPairs(const std::string& t, std::map<std::string, std::string>& params) {
  std::vector<std::string> seg;
  size_t i = 0;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size()) {
      if (std::isspace(static_cast<unsigned char>(t[j])) && j + 1 < t.size() && std::isspace(static_cast<unsigned char>(t[j + 1]))) break;
      if (t[j] == '\t') break;
      ++j;
    }
    if (j > i) seg.push_back(Trim(t.substr(i, j - i)));
    while (j < t.size() && std::isspace(static_cast<unsigned char>(t[j]))) ++j;
    i = j;
  }
  for (size_t k = 0; k < seg.size(); ++k) {
    if (seg[k].empty() || seg[k][0] == ':') continue;
    auto c = seg[k].find(':');
    std::string key, value;
    if (c != std::string::npos) {
      key = Trim(seg[k].substr(0, c));
      value = Trim(seg[k].substr(c + 1));
    } else if (k + 1 < seg.size() && !seg[k + 1].empty() && seg[k + 1][0] == ':') {
      key = seg[k];
      value = Trim(seg[k + 1].substr(1));
      ++k;
    }
    if (!key.empty() && key.size() < 24) params[key] = value;
  }
}

}  // namespace

bool LooksLikePerftest(const std::vector<Line>& lines) {
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (IsPerftestBanner(t)) return true;
    if (StartsWith(t, "#bytes") && (Contains(t, "BW peak[") || Contains(t, "t_min[usec]"))) return true;
  }
  return false;
}

namespace {

struct PerftestRow {
  int line;
  double bytes, peak_gbit_per_s, avg_gbit_per_s;
};

// Stage 1 of a perftest output: banner, parameters, the results header and its rows.
struct PerftestScan {
  std::map<std::string, std::string> params;  // Device, Link type, Mtu, Number of qps, ...
  std::vector<std::string> header;            // tokens of the last "#bytes ..." line
  int header_line = 0;
  bool gbits = true, latency = false, rows_after_header = false;
  std::set<std::string> seen_rows;
  std::vector<PerftestRow> bw_rows;
};

// "#bytes #iterations t_min[usec] ... 99.9% percentile[usec]" columns -> reading names.
std::string LatencyMetric(const std::string& header) {
  const std::string name = header.substr(0, header.find('['));
  static const std::map<std::string, std::string> kNames = {{"t_min", "lat_min_us"},     {"t_max", "lat_max_us"},   {"t_typical", "lat_typical_us"},
                                                            {"t_avg", "lat_avg_us"},     {"t_stdev", "lat_stdev_us"}, {"99%", "lat_p99_us"},
                                                            {"99.9%", "lat_p999_us"}};
  auto it = kNames.find(name);
  return it == kNames.end() ? "" : it->second;
}

// One result row under the header: latency columns become readings now, bandwidth rows are kept.
void ScanPerftestRow(const Line& l, const std::string& t, Builder& b, PerftestScan& sc) {
  auto tok = Tokens(t);
  if (tok.empty() || !Integer(tok[0])) return;
  if (tok.size() < (sc.latency ? 5u : 4u)) {
    b.Warn(l.number, "result row has " + std::to_string(tok.size()) + " fields (cut short?); read " + std::to_string(sc.bw_rows.size()) + " row(s) up to it");
    return;
  }
  sc.rows_after_header = true;
  if (!sc.seen_rows.insert(t).second) return;  // the server and the client print the same row
  if (sc.latency) {
    for (size_t i = 2; i < tok.size() && i < sc.header.size(); ++i) {
      const std::string metric = LatencyMetric(sc.header[i]);
      if (metric.empty()) continue;
      auto v = Number(tok[i]);
      if (!v) {
        b.Warn(l.number, "latency field '" + tok[i] + "' under '" + sc.header[i] + "' is not a number");
        continue;
      }
      b.Add(metric, *v, "us", l.number).context["msg_bytes"] = tok[0];
    }
    return;
  }
  auto peak = Number(tok[2]), avg = Number(tok[3]);
  if (!peak || !avg) {
    b.Warn(l.number, "bandwidth fields '" + tok[2] + "', '" + tok[3] + "' are not numbers");
    return;
  }
  if (*peak < 0 || *avg < 0) {  // perftest prints -1 when a run fails; one warning for the row, not one per summary
    b.Warn(l.number, "bandwidth fields '" + tok[2] + "', '" + tok[3] + "' are negative (a failed run); row not read");
    return;
  }
  // perftest: Gb/sec = bytes/s / 1.25e8; MB/sec = bytes/s / 2^20 (format_factor in perftest_parameters.c).
  const double k = sc.gbits ? 1.0 : 1048576.0 * 8 / 1e9;
  sc.bw_rows.push_back({l.number, static_cast<double>(*Integer(tok[0])), *peak * k, *avg * k});
}

PerftestScan ScanPerftest(const std::vector<Line>& lines, Builder& b, ToolOutput& out) {
  PerftestScan sc;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (IsPerftestBanner(t)) {
      if (out.tool.empty()) out.tool = PerftestTool(t);
    } else if (Contains(t, "Conflicting CPU frequency values detected")) {
      b.AddState("cpu_frequency_not_max", t, l.number).context["note"] = "perftest measured with a CPU clock below its maximum (governor / power saving)";
    } else if (!StartsWith(t, "#") && Contains(t, ":") && !std::isdigit(static_cast<unsigned char>(t.empty() ? ' ' : t[0]))) {
      ReadPerftestPairs(t, sc.params);  // "Dual-port       : OFF\t\tDevice         : mlx5_5"
    } else if (StartsWith(t, "#bytes")) {
      sc.header = Tokens(t);
      sc.header_line = l.number;
      sc.gbits = Contains(t, "Gb/sec");
      sc.latency = Contains(t, "t_min[usec]") || Contains(t, "t_typical");
      sc.rows_after_header = false;
    } else if (!sc.header.empty()) {
      ScanPerftestRow(l, t, b, sc);
    }
  }
  if (sc.header_line > 0 && !sc.rows_after_header)
    b.Warn(sc.header_line, "results header but no result row after it: the output stops here (cut short?); read the parameters only");
  if (sc.header_line == 0) b.Warn(0, "perftest banner without a results header (#bytes ...): the run did not finish");
  return sc;
}

// Stage 2: the bandwidth summary (the largest message, the best row), the MTU, the shared context.
void AddPerftestReadings(Builder& b, const PerftestScan& sc, ToolOutput& out) {
  for (const auto& r : sc.bw_rows) b.Add("row_bw_avg_gbit_per_s", r.avg_gbit_per_s, "Gb/s", r.line).context["msg_bytes"] = Num(r.bytes);
  if (!sc.bw_rows.empty()) {
    const PerftestRow* big = &sc.bw_rows.front();
    const PerftestRow* best = &sc.bw_rows.front();
    for (const auto& r : sc.bw_rows) {
      if (r.bytes > big->bytes) big = &r;
      if (r.avg_gbit_per_s > best->avg_gbit_per_s) best = &r;
    }
    b.Add("bw_avg_gbit_per_s", big->avg_gbit_per_s, "Gb/s", big->line).context["msg_bytes"] = Num(big->bytes);
    b.Add("bw_peak_gbit_per_s", big->peak_gbit_per_s, "Gb/s", big->line).context["msg_bytes"] = Num(big->bytes);
    b.Add("bw_avg_max_gbit_per_s", best->avg_gbit_per_s, "Gb/s", best->line);
  }
  if (auto it = sc.params.find("Mtu"); it != sc.params.end())
    if (auto v = Number(it->second.substr(0, it->second.find('[')))) b.Add("mtu_bytes", *v, "bytes", sc.header_line);
  if (out.tool.empty()) out.tool = sc.latency ? "perftest latency" : "perftest bandwidth";
  for (auto& r : out.readings) {
    r.tool = out.tool;
    for (const char* k : {"Device", "Link type", "Number of qps", "GID index", "Connection type"})
      if (auto it = sc.params.find(k); it != sc.params.end()) {
        std::string key = Lower(k);
        std::replace(key.begin(), key.end(), ' ', '_');
        r.context[key == "number_of_qps" ? "qps" : key] = it->second;
      }
    if (!sc.latency) r.context["reported_unit"] = sc.gbits ? "Gb/sec" : "MB/sec";
  }
}

}  // namespace

void ParsePerftest(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  const PerftestScan sc = ScanPerftest(lines, b, out);
  AddPerftestReadings(b, sc, out);
}

// ---- a Markdown table of perftest results ----

bool LooksLikePerftestTable(const std::vector<Line>& lines) {
  for (const auto& l : lines)
    if (StartsWith(Trim(l.text), "|") && Contains(l.text, "ib_") && (Contains(l.text, "(Gbps)") || Contains(l.text, "(MB/s)"))) return true;
  return false;
}

void ParsePerftestTable(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "perftest (table)";
  std::vector<std::string> header;
  bool bidirectional = true;  // the first table of the fixture's layout is -b; "w/o -b" marks the next
  struct Best { double v = -1; int line = 0; double bytes = 0; };
  std::map<std::string, Best> best;
  bool line_rate_read = false;
  auto flush = [&]() {
    for (const auto& [tool, bb] : best) {
      if (bb.v < 0) continue;
      Reading& r = b.Add(bidirectional ? "bw_avg_max_bidir_gbit_per_s" : "bw_avg_gbit_per_s", bb.v, "Gb/s", bb.line);
      r.tool = tool;
      r.context["direction"] = bidirectional ? "bidirectional (-b)" : "unidirectional";
      if (bb.bytes > 0) r.context["msg_bytes"] = Num(bb.bytes);
    }
    best.clear();
  };
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (Contains(t, "w/o -b")) {
      flush();
      bidirectional = false;
      header.clear();
      continue;
    }
    if (!StartsWith(t, "|")) continue;
    auto cells = SplitList(t.substr(1, t.size() >= 2 && t.back() == '|' ? t.size() - 2 : std::string::npos), '|');
    for (auto& c : cells) c = Trim(c);
    if (!cells.empty() && StartsWith(cells[0], "---")) continue;
    if (header.empty() || Contains(t, "(Gbps)")) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size()) {
      b.Warn(l.number, "table row has " + std::to_string(cells.size()) + " cells, the header " + std::to_string(header.size()));
      continue;
    }
    double bytes = 0;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string& h = header[i];
      auto v = Number(cells[i]);
      if (!v) {
        b.Warn(l.number, "cell '" + cells[i] + "' under '" + h + "' is not a number");
        continue;
      }
      if (StartsWith(h, "Data Size")) {
        bytes = *v;
      } else if (StartsWith(h, "Peak")) {
        if (!line_rate_read) b.Add("line_rate_gbit_per_s", *v, "Gb/s", l.number), line_rate_read = true;
      } else if (Contains(h, "(Gbps)")) {
        const std::string tool = Trim(h.substr(0, h.find('(')));
        Best& bb = best[tool];
        if (*v > bb.v) bb = {*v, l.number, bytes};
      }
    }
  }
  flush();
}

}  // namespace gpuplan::toolout
