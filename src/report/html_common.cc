// The report's words (data/report_strings.csv) and what the HTML reports share: formatting only.
#include "html_common.h"

#include <algorithm>
#include <cstdio>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

Result<ReportLang> ParseReportLang(const std::string& text, const Location& where) {
  if (text == "en") return ReportLang::kEn;
  if (text == "zh") return ReportLang::kZh;
  return Status::BadInput(where, "expected en or zh, got '" + text + "'");
}

Result<ReportText> ReportText::Load(ReportLang lang) {
  const std::string file = "data/report_strings.csv";
  auto table = ParseCsv(std::string(EmbeddedData("report_strings.csv")), file);
  if (!table.ok()) return table.status();
  const char* column = lang == ReportLang::kZh ? "zh" : "en";
  for (const char* c : {"key", "en", "zh"})
    if (table->Column(c) < 0) return Status::BadInput({file, 1, c}, "missing column");
  ReportText out;
  out.lang_ = lang;
  for (const CsvRow& row : table->rows) {
    const CsvRecord rec(*table, row);
    for (const char* c : {"key", "en", "zh"})
      if (rec.Str(c).empty()) return Status::BadInput(rec.Where(c), "empty (every key has its English and its Chinese)");
    out.words_.emplace_back(rec.Str("key"), rec.Str(column));
  }
  std::sort(out.words_.begin(), out.words_.end());
  for (size_t i = 1; i < out.words_.size(); ++i)
    if (out.words_[i].first == out.words_[i - 1].first)
      return Status::BadInput({file, 0, out.words_[i].first}, "the key is listed twice");
  return out;
}

std::string ReportText::operator()(const std::string& key, const std::vector<std::string>& args) const {
  auto it = std::lower_bound(words_.begin(), words_.end(), key,
                             [](const std::pair<std::string, std::string>& w, const std::string& k) { return w.first < k; });
  if (it == words_.end() || it->first != key) return "[" + key + "]";
  std::string s = it->second;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string mark = "{" + std::to_string(i) + "}";
    for (size_t at = s.find(mark); at != std::string::npos; at = s.find(mark, at + args[i].size()))
      s.replace(at, mark.size(), args[i]);
  }
  return s;
}

namespace html_report {

std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string Int(int64_t v) { return WithThousands(v); }
std::string Usd(double v) { return v >= 100 ? "$" + WithThousands(static_cast<int64_t>(v + 0.5)) : F("$%.2f", v); }
std::string GiB(double bytes) { return FormatGiB(bytes) + " GiB"; }
std::string Hours(const ReportText& t, double s) { return t("unit_hours", {F(s < 3600 * 48 ? "%.1f" : "%.0f", s / 3600)}); }
std::string Seconds(const ReportText& t, double s) { return t("unit_seconds", {F(s < 10 ? "%.3g" : "%.1f", s)}); }
std::string Percent(double fraction) { return F("%.1f%%", 100 * fraction); }

std::string ModelName(const ReportText& t, const Job& job) { return job.arch.name.empty() ? t("custom_model") : job.arch.name; }

std::string Header(const std::string& title, const Facts& facts) {
  return "<header><h1>" + html::Escape(title) + "</h1>\n" + html::Facts(facts) + "</header>\n";
}
std::string H2(const std::string& text) { return "<h2>" + html::Escape(text) + "</h2>\n"; }
std::string Para(const std::string& text, const std::string& cls) {
  return (cls.empty() ? "<p>" : "<p class=\"" + html::Escape(cls) + "\">") + html::Escape(text) + "</p>\n";
}
std::string List(const std::vector<std::string>& items, const std::string& cls) {
  std::string out = cls.empty() ? "<ul>" : "<ul class=\"" + html::Escape(cls) + "\">";
  for (const auto& i : items) out += "<li>" + html::Escape(i) + "</li>";
  return out + "</ul>\n";
}
std::string Pre(const std::vector<std::string>& lines) {
  std::string out = "<pre>";
  for (const auto& l : lines) out += html::Escape(l) + "\n";
  return out + "</pre>\n";
}

std::string Rejections(const ReportText& t, const std::vector<Rejection>& rejected) {
  std::string out = H2(t("rejections"));
  if (rejected.empty()) return out + Para(t("none"));
  std::vector<Rejection> by_count = rejected;
  std::stable_sort(by_count.begin(), by_count.end(), [](const Rejection& a, const Rejection& b) { return a.count > b.count; });
  std::vector<std::vector<std::string>> rows;
  for (const auto& x : by_count) rows.push_back({Int(x.count), x.code, x.reason});
  return out + html::Table({t("col_count"), t("col_code"), t("col_reason")}, rows, {0});
}

std::string Notes(const ReportText& t, const std::vector<std::string>& notes) {
  return notes.empty() ? "" : H2(t("notes")) + List(notes, "note");
}

std::string Footer(const ReportText& t) {
  return "<footer>" + html::Escape(t("footer", {kVersion, ModelFingerprint()})) + "</footer>\n";
}

std::string Page(const ReportText& t, const std::string& title, const std::string& body) {
  return html::Document(t.LangTag(), title, body + Footer(t));
}

}  // namespace html_report
}  // namespace gpuplan
