// A small writer of self-contained HTML with inline SVG plots (docs/report-html.md): escaping, a scatter
// plot with a connected series and a limit line, horizontal (stacked) bars with marker lines, tables.
// It draws what it is given: axis scaling and number formatting only, never a number of the model.
// Every element it writes is closed (void elements as <meta/>), so the page is well-formed XML too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuplan::html {

// Text or an attribute value made safe: & < > " ' escaped, control characters dropped, bytes that are
// not UTF-8 replaced by U+FFFD (a user's model or file name never breaks the page).
std::string Escape(std::string_view text);

// The fill of palette entry i (cycled); the report's colours, readable in print.
const char* Colour(size_t i);

struct Point {
  double x = 0, y = 0;
  std::string title;            // shown on hover (SVG <title>)
  bool highlight = false;       // drawn filled (the chosen or a front setup)
};

struct ScatterPlot {
  std::string title;            // the plot's accessible name and caption
  std::string x_label, y_label; // with units
  std::vector<Point> points;    // one circle each (class "pt", "pt hi" when highlighted)
  std::string points_label;     // the legend of the points ("" = none)
  std::string highlight_label;  // the legend of the highlighted points ("" = none)
  std::vector<Point> series;    // joined by a line, one square marker each (class "fr"); Default: none
  std::string series_label;     // the legend of the series
  std::optional<double> y_limit;  // a horizontal limit line (an SLA); Default: none
  std::string y_limit_label;
  std::string log_word = "log"; // appended to an axis label drawn on a log scale: "hours (log)"
};
// An <svg> scatter plot. An axis whose values span more than kLogSpan (html.cc) and stay > 0 is drawn
// on a log scale; the tick labels say which.
std::string Scatter(const ScatterPlot& plot);

struct Segment {
  std::string label;            // the legend entry (segments of one label share a colour)
  double value = 0;             // drawn length (negative values are drawn as 0)
  std::string text;             // the value as the report writes it, in the hover title and the legend
  bool gap = false;             // not drawn (an offset: a bar that starts later)
};
struct Bar {
  std::string label;            // left of the bar (truncated when long; the hover title has it whole)
  std::vector<Segment> segments;
  std::string note;             // right of the bar: the total, as the report writes it
};
struct Marker {
  double value = 0;
  std::string label;            // a vertical line across every bar (capacity, a deadline)
};
struct BarChart {
  std::string title;
  std::string axis_label;       // with units
  std::vector<Bar> bars;
  std::vector<Marker> markers;
};
// An <svg> of horizontal bars on one shared linear axis, each bar a stack of segments, with a legend.
std::string Bars(const BarChart& chart);

// A <table>; every cell is text (escaped). Columns listed in `numeric` are right-aligned.
std::string Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::vector<size_t>& numeric = {});

// A definition list of label/value pairs (escaped).
std::string Facts(const std::vector<std::pair<std::string, std::string>>& facts);

// The whole document: <!DOCTYPE html>, the inline style sheet (screen and print), the title and `body`
// (already HTML). `lang` is the html lang attribute ("en", "zh").
std::string Document(const std::string& lang, const std::string& title, const std::string& body);

}  // namespace gpuplan::html
