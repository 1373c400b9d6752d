// The HTML reports (docs/report-html.md): well-formed pages, one point per ranked setup, users' strings
// escaped, no network reference, both languages complete, and the writer's edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "gpuplan/html.h"
#include "gpuplan/html_report.h"
#include "gpuplan/pool_plan.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::BuiltinCatalog;

// A tiny well-formedness check: every element closed in order (void elements written <x/>), attribute values
// quoted, the <style> sheet raw text. Returns "" or what is wrong.
std::string CheckWellFormed(const std::string& page) {
  std::vector<std::string> open;
  size_t i = 0;
  if (page.rfind("<!DOCTYPE html>", 0) != 0) return "no doctype";
  i = page.find('>') + 1;
  while ((i = page.find('<', i)) != std::string::npos) {
    const size_t end = page.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = page.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes: " + tag;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;  // <meta .../>
    const std::string name = tag.substr(0, tag.find_first_of(" \n"));
    if (name == "style") {  // raw text up to </style>
      i = page.find("</style>", i);
      if (i == std::string::npos) return "unclosed <style>";
      i += 8;
      continue;
    }
    open.push_back(name);
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// No script, no resource fetched: no src=, no url(), no http(s):// anywhere, no <script>.
void ExpectSelfContained(const std::string& page) {
  for (const char* bad : {"<script", "src=", "url(", "http://", "https://", "@import", "<link", "<iframe"})
    EXPECT_EQ(page.find(bad), std::string::npos) << bad;
}

// A word key the strings file lacks shows as "[key]": none may reach a page.
void ExpectEveryWordKnown(const std::string& page) {
  std::smatch m;
  EXPECT_FALSE(std::regex_search(page, m, std::regex("\\[[a-z][a-z0-9_]*\\]"))) << m.str();
}

Job PlanJobFile(const std::string& name) {
  auto j = ParseJobFile(std::string(GPUPLAN_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : Job{};
}

const char* kEvilName = "evil<&\"'>model";
const char* kEvilEscaped = "evil&lt;&amp;&quot;&#39;&gt;model";

struct PlanCase {
  Job job;
  PlanResult result;
};
const PlanCase& SevenB() {
  static const PlanCase c = [] {
    PlanCase out{PlanJobFile("7b-full-finetune-1node.yaml"), {}};
    auto r = PlanJob(out.job, BuiltinCatalog(), Calibration::Builtin());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.result = *r;
    out.job.arch.name = kEvilName;  // a user's model name (a config.json's): printed, never trusted
    return out;
  }();
  return c;
}

std::string PlanPage(ReportLang lang) {
  const PlanPrintContext ctx{&BuiltinCatalog(), &Calibration::Builtin()};
  auto page = PlanToHtml(SevenB().result, SevenB().job, ctx, {lang});
  EXPECT_TRUE(page.ok()) << page.status().ToString();
  return page.ok() ? *page : "";
}

TEST(HtmlReport, PlanPageIsWellFormedAndSelfContained) {
  const std::string page = PlanPage(ReportLang::kEn);
  ASSERT_FALSE(SevenB().result.plans.empty());
  EXPECT_EQ(CheckWellFormed(page), "");
  ExpectSelfContained(page);
  ExpectEveryWordKnown(page);
  EXPECT_NE(page.find("<html lang=\"en\">"), std::string::npos);
  EXPECT_NE(page.find("@media print"), std::string::npos);
}

TEST(HtmlReport, PlanDrawsOnePointPerRankedSetupAndOneMarkPerFrontSetup) {
  const PlanResult& r = SevenB().result;
  const std::string page = PlanPage(ReportLang::kEn);
  size_t priced = 0, front = 0;
  for (const Plan& p : r.plans) priced += p.cost.price_known;
  for (const Plan& p : r.pareto) front += p.cost.price_known;
  ASSERT_GT(priced, 1u);
  EXPECT_EQ(Count(page, "<circle class=\"pt"), priced);
  EXPECT_EQ(Count(page, "<circle class=\"pt hi\""), 1u);  // the best setup
  EXPECT_EQ(Count(page, "<rect class=\"fr\""), front);
  // Every point says which setup it is.
  EXPECT_EQ(Count(page, "<circle class=\"pt"), Count(page, "\"><title>#"));
}

TEST(HtmlReport, UsersStringsAreEscaped) {
  const std::string page = PlanPage(ReportLang::kEn);
  EXPECT_NE(page.find(kEvilEscaped), std::string::npos);
  EXPECT_EQ(page.find("evil<"), std::string::npos);
  EXPECT_EQ(html::Escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(html::Escape(std::string("bad\xff\xfe utf8")), "bad\xEF\xBF\xBD\xEF\xBF\xBD utf8");  // U+FFFD each
  EXPECT_EQ(html::Escape(std::string("ctl\x01\x1b[31m")), "ctl[31m");
  EXPECT_EQ(html::Escape("显存 80 GiB"), "显存 80 GiB");
  EXPECT_EQ(html::Escape(std::string("\xC0\xAF")), "\xEF\xBF\xBD\xEF\xBF\xBD");  // an overlong '/'
}

TEST(HtmlReport, ChinesePageUsesTheChineseWords) {
  const std::string page = PlanPage(ReportLang::kZh);
  EXPECT_EQ(CheckWellFormed(page), "");
  ExpectEveryWordKnown(page);
  EXPECT_NE(page.find("<html lang=\"zh\">"), std::string::npos);
  for (const char* word : {"帕累托前沿", "显存", "训练时长", "成本", "微批次", "数据并行"})
    EXPECT_NE(page.find(word), std::string::npos) << word;
  EXPECT_EQ(page.find("Pareto front"), std::string::npos);
}

// The memory bar of the best setup is the library's breakdown of that setup, whose total is the plan's record.
TEST(HtmlReport, BestSetupsMemoryBreakdownAddsUpToItsRecord) {
  const Plan& p = SevenB().result.plans.front();
  const MemoryBreakdown m = EstimateMemory(p.job, Calibration::Builtin());
  EXPECT_NEAR(m.total_bytes, p.memory_bytes, 1e-6 * p.memory_bytes);
  EXPECT_NEAR(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.buffers_bytes + m.overhead_bytes,
              m.total_bytes, 1e-6 * m.total_bytes);
}

TEST(HtmlReport, NoPlanPageSaysWhy) {
  Job job = PlanJobFile("7b-full-finetune-1node.yaml");
  ASSERT_TRUE(SetJobKey(job, "constraints.budget_usd", "1", {"test", 0, ""}).ok());
  auto r = PlanJob(job, BuiltinCatalog(), Calibration::Builtin());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->plans.empty());
  auto page = PlanToHtml(*r, job, {&BuiltinCatalog(), nullptr}, {});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(CheckWellFormed(*page), "");
  EXPECT_NE(page->find(html::Escape(r->relax)), std::string::npos);
  EXPECT_EQ(Count(*page, "<circle class=\"pt"), 0u);
}

TEST(HtmlReport, PoolPlanShowsEveryStage) {
  auto pool = LoadPoolFile(std::string(GPUPLAN_SOURCE_DIR) + "/examples/pool-h800-h20.yaml", BuiltinCatalog());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  Job job = PlanJobFile("pool-32b-h800-h20.yaml");
  auto r = PlanOnPool(job, *pool, BuiltinCatalog(), Calibration::Builtin(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->plans.empty());
  auto page = PoolPlanToHtml(*pool, *r, job, {ReportLang::kZh});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(CheckWellFormed(*page), "");
  ExpectSelfContained(*page);
  ExpectEveryWordKnown(*page);
  EXPECT_NE(page->find("混合卡池"), std::string::npos);
  const size_t stages = r->plans.front().estimate.stages.size();
  for (size_t s = 0; s < stages; ++s) EXPECT_NE(page->find("阶段 " + std::to_string(s)), std::string::npos) << s;
}

TEST(HtmlReport, EveryWordHasBothLanguagesAndABadLanguageIsAnError) {
  for (ReportLang lang : {ReportLang::kEn, ReportLang::kZh}) {
    auto t = ReportText::Load(lang);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ((*t)("no_such_key"), "[no_such_key]");
  }
  EXPECT_EQ((*ReportText::Load(ReportLang::kEn))("unit_hours", {"12.5"}), "12.5 h");
  EXPECT_EQ((*ReportText::Load(ReportLang::kZh))("unit_hours", {"12.5"}), "12.5 小时");
  EXPECT_TRUE(ParseReportLang("zh", {}).ok());
  auto bad = ParseReportLang("fr", {"command line", 0, "--lang"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadInput);
  EXPECT_NE(bad.status().ToString().find("expected en or zh, got 'fr'"), std::string::npos);
}

// Axis scaling never writes nan or inf, whatever the values: one point, equal values, zeros, a huge span.
TEST(HtmlWriter, AxesStayFiniteOnDegenerateInputs) {
  const std::vector<std::vector<html::Point>> cases = {
      {{5, 5, "one"}}, {{0, 0, "zero"}, {0, 0, "zero"}}, {{1, 1e-3, "a"}, {1e6, 1e4, "b"}}, {{-3, 2, "neg"}, {4, -1, "neg"}}, {},
      {{1e17, 1, "past double precision"}, {1e17 + 16, 2, "past double precision"}},
      {{std::nan(""), 1, "p"}, {2, std::numeric_limits<double>::infinity(), "q"}}};
  for (const auto& pts : cases) {
    html::ScatterPlot plot;
    plot.title = "t";
    plot.points = pts;
    plot.y_limit = 3;
    const std::string svg = html::Scatter(plot);
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
    EXPECT_EQ(Count(svg, "<circle class=\"pt"), pts.size());
  }
  html::BarChart chart{"bars", "GiB", {{"all zero", {{"a", 0, "0"}}, ""}, {"negative", {{"a", -4, "-4"}}, ""}}, {}};
  const std::string svg = html::Bars(chart);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("width=\"-"), std::string::npos) << svg;
}

TEST(HtmlWriter, ASpanOfDecadesIsDrawnOnALogScale) {
  html::ScatterPlot plot;
  plot.x_label = "hours";
  plot.y_label = "USD";
  plot.log_word = "log";
  plot.points = {{1, 10, "a"}, {1000, 20, "b"}};
  const std::string svg = html::Scatter(plot);
  EXPECT_NE(svg.find("hours (log)"), std::string::npos);
  EXPECT_EQ(svg.find("USD (log)"), std::string::npos);
}

TEST(HtmlWriter, LongLabelsAreCutButKeptWholeInTheTitle) {
  const std::string name(60, 'x');
  const std::string svg = html::Bars({"t", "u", {{name, {{"a", 1, "1"}}, ""}}, {}});
  EXPECT_NE(svg.find("<title>" + name + "</title>"), std::string::npos);
  EXPECT_NE(svg.find("\xE2\x80\xA6"), std::string::npos);  // the ellipsis of the cut label
}

}  // namespace
}  // namespace gpuplan
