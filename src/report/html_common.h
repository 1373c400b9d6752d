// What the HTML reports share (src/report/html_*.cc): number formats, the page's header and footer, the
// rejections and notes sections. Formatting only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpuplan/html.h"
#include "gpuplan/html_report.h"
#include "gpuplan/plan.h"

namespace gpuplan::html_report {

using Facts = std::vector<std::pair<std::string, std::string>>;

std::string F(const char* fmt, double v);
std::string Int(int64_t v);          // "1,024"
std::string Usd(double v);           // "$1,234" (from $100), "$12.34" below
std::string GiB(double bytes);       // "12.3 GiB"
std::string Hours(const ReportText& t, double s);    // "12.3 h" / "12.3 小时"
std::string Seconds(const ReportText& t, double s);  // "1.52 s" / "1.52 秒"
std::string Percent(double fraction);                // "41.2%"

// The job's model name, or words for an architecture given by its sizes alone.
std::string ModelName(const ReportText& t, const Job& job);
// <h1>, the facts under it.
std::string Header(const std::string& title, const Facts& facts);
std::string H2(const std::string& text);
std::string Para(const std::string& text, const std::string& cls = "");
std::string List(const std::vector<std::string>& items, const std::string& cls = "");
std::string Pre(const std::vector<std::string>& lines);
// The rejections by count, largest first (count, code, reason), or "none".
std::string Rejections(const ReportText& t, const std::vector<Rejection>& rejected);
// "notes" and its list (nothing when empty).
std::string Notes(const ReportText& t, const std::vector<std::string>& notes);
// The version and model fingerprint that produced the page, and what the page is.
std::string Footer(const ReportText& t);
// The whole page in the report's language.
std::string Page(const ReportText& t, const std::string& title, const std::string& body);

}  // namespace gpuplan::html_report
