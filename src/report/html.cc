// The HTML/SVG writer of the reports (include/gpuplan/html.h): axis scaling and formatting only.
#include "gpuplan/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "gpuplan/strings.h"

namespace gpuplan::html {

namespace {

// Plot geometry, in SVG user units (the <svg> scales to the page width; docs/report-html.md).
constexpr double kPlotWidth = 800, kPlotHeight = 380;
constexpr double kPlotLeft = 78, kPlotRight = 24, kPlotTop = 16, kPlotBottom = 52;
constexpr double kPointRadius = 5, kMarkerSide = 8;
constexpr double kLogSpan = 20;            // an axis whose max / min exceeds this is drawn on a log scale
constexpr int kLinearTicks = 5;            // about this many ticks on a linear axis
constexpr int kMaxTicks = 12;              // never more (a range the values' precision cannot split)
constexpr double kBarWidth = 800, kBarLabelWidth = 210, kBarNoteWidth = 190, kBarRow = 26, kBarThickness = 16, kBarAxis = 40;
constexpr size_t kBarLabelChars = 26;      // longer bar labels are cut (the hover title has them whole)

const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"};

std::string Num(double v) {
  if (!std::isfinite(v)) v = 0;  // a coordinate is always a number (a record's nan must not break the SVG)
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick label: up to 4 significant digits, no exponent below 1e7.
std::string Tick(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e7 || std::fabs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%.2g", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The code points of `s`; a byte that does not start a valid UTF-8 sequence becomes U+FFFD.
std::vector<uint32_t> Decode(std::string_view s) {
  std::vector<uint32_t> out;
  for (int64_t cp : Utf8CodePoints(s)) out.push_back(cp < 0 ? 0xFFFD : static_cast<uint32_t>(cp));
  return out;
}

// At most `max_chars` code points of `s`, an ellipsis marking a cut.
std::string Cut(const std::string& s, size_t max_chars) {
  const std::vector<uint32_t> cps = Decode(s);
  if (cps.size() <= max_chars) return s;
  std::string out;
  for (size_t i = 0; i + 1 < max_chars; ++i) AppendUtf8(out, cps[i]);
  AppendUtf8(out, 0x2026);
  return out;
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double px0 = 0, px1 = 1;  // screen positions of lo and hi
  double Map(double v) const {
    const double t = log ? (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return px0 + t * (px1 - px0);
  }
  std::vector<double> Ticks() const;
};

// 1, 2 or 5 times a power of ten, near `raw`.
double NiceStep(double raw) {
  const double p = std::pow(10, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

std::vector<double> Axis::Ticks() const {
  std::vector<double> out;
  if (log) {
    const int d0 = static_cast<int>(std::round(std::log10(lo))), d1 = static_cast<int>(std::round(std::log10(hi)));
    for (int d = d0; d <= d1; ++d)
      for (double m : d1 - d0 <= 2 ? std::vector<double>{1, 2, 5} : std::vector<double>{1})
        if (const double v = m * std::pow(10, d); v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    return out;
  }
  // Counted, not accumulated: a step below the values' precision (1e17 +- 16) must not loop forever.
  const double step = NiceStep((hi - lo) / kLinearTicks);
  const int n = std::clamp(static_cast<int>(std::round((hi - lo) / step)), 0, kMaxTicks);
  for (int k = 0; k <= n; ++k) {
    const double v = lo + k * step;
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

// An axis over `values` (finite ones), from zero when `from_zero` and the values are >= 0.
Axis MakeAxis(const std::vector<double>& values, double px0, double px1, bool from_zero) {
  double lo = 0, hi = 0;
  bool any = false;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
  Axis a;
  a.px0 = px0;
  a.px1 = px1;
  if (!any || !std::isfinite(hi - lo)) return a;  // nothing to place, or a span past double range
  if (!from_zero && lo > 0 && hi / lo > kLogSpan) {
    a.log = true;
    a.lo = std::pow(10, std::floor(std::log10(lo)));
    a.hi = std::pow(10, std::ceil(std::log10(hi)));
    return a;
  }
  if (from_zero && lo > 0) lo = 0;
  if (hi - lo <= 0) {  // one value (or all equal): a range around it
    const double pad = lo != 0 ? std::fabs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
    if (from_zero && lo < 0 && hi - pad >= 0) lo = 0;
  }
  const double step = NiceStep((hi - lo) / kLinearTicks);
  a.lo = std::floor(lo / step) * step;
  a.hi = std::ceil(hi / step) * step;
  return a;
}

std::string SvgOpen(double w, double h, const std::string& title) {
  return "<svg viewBox=\"0 0 " + Num(w) + " " + Num(h) + "\" width=\"" + Num(w) + "\" height=\"" + Num(h) +
         "\" role=\"img\"><title>" + Escape(title) + "</title>";
}

std::string Line(double x1, double y1, double x2, double y2, const char* cls) {
  return "<line class=\"" + std::string(cls) + "\" x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) +
         "\"/>";
}

std::string Text(double x, double y, const std::string& text, const char* anchor, const std::string& extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + Escape(text) + "</text>";
}

// Grid lines, ticks and labels of both axes of a scatter plot.
std::string ScatterAxes(const Axis& x, const Axis& y, const ScatterPlot& p) {
  std::string out;
  for (double v : x.Ticks()) {
    out += Line(x.Map(v), y.px1, x.Map(v), y.px0, "grid");
    out += Text(x.Map(v), y.px0 + 16, Tick(v), "middle");
  }
  for (double v : y.Ticks()) {
    out += Line(x.px0, y.Map(v), x.px1, y.Map(v), "grid");
    out += Text(x.px0 - 6, y.Map(v) + 4, Tick(v), "end");
  }
  out += Line(x.px0, y.px0, x.px1, y.px0, "axis") + Line(x.px0, y.px0, x.px0, y.px1, "axis");
  out += Text((x.px0 + x.px1) / 2, kPlotHeight - 10, p.x_label + (x.log ? " (" + p.log_word + ")" : ""), "middle");
  const double ymid = (y.px0 + y.px1) / 2;
  out += Text(16, ymid, p.y_label + (y.log ? " (" + p.log_word + ")" : ""), "middle", " transform=\"rotate(-90 16 " + Num(ymid) + ")\"");
  return out;
}

std::string LegendItem(const std::string& swatch, const std::string& label) {
  return "<li><svg width=\"12\" height=\"12\" viewBox=\"0 0 12 12\">" + swatch + "</svg> " + Escape(label) + "</li>";
}

std::string Figure(const std::string& title, const std::string& svg, const std::string& legend) {
  return "<figure><figcaption>" + Escape(title) + "</figcaption>" + svg +
         (legend.empty() ? "" : "<ul class=\"legend\">" + legend + "</ul>") + "</figure>\n";
}

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : Decode(text)) {
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters (but tab and newline) are not allowed in the page.
        if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF) break;
        AppendUtf8(out, cp);
    }
  }
  return out;
}

const char* Colour(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

std::string Scatter(const ScatterPlot& p) {
  std::vector<double> xs, ys;
  for (const auto* list : {&p.points, &p.series})
    for (const Point& q : *list) xs.push_back(q.x), ys.push_back(q.y);
  if (p.y_limit) ys.push_back(*p.y_limit);
  const Axis x = MakeAxis(xs, kPlotLeft, kPlotWidth - kPlotRight, false);
  const Axis y = MakeAxis(ys, kPlotHeight - kPlotBottom, kPlotTop, false);
  std::string svg = SvgOpen(kPlotWidth, kPlotHeight, p.title) + ScatterAxes(x, y, p);
  std::string legend;
  if (p.y_limit) {
    svg += Line(x.px0, y.Map(*p.y_limit), x.px1, y.Map(*p.y_limit), "limit");
    svg += Text(x.px1 - 4, y.Map(*p.y_limit) - 5, p.y_limit_label, "end", " class=\"limit-label\"");
    legend += LegendItem("<line class=\"limit\" style=\"stroke-dasharray:3 2\" x1=\"0\" y1=\"6\" x2=\"12\" y2=\"6\"/>", p.y_limit_label);
  }
  if (p.series.size() > 1) {
    std::string pts;
    for (const Point& q : p.series) pts += (pts.empty() ? "" : " ") + Num(x.Map(q.x)) + "," + Num(y.Map(q.y));
    svg += "<polyline class=\"front\" points=\"" + pts + "\"/>";
  }
  for (const Point& q : p.points)
    svg += "<circle class=\"pt" + std::string(q.highlight ? " hi" : "") + "\" cx=\"" + Num(x.Map(q.x)) + "\" cy=\"" + Num(y.Map(q.y)) +
           "\" r=\"" + Num(kPointRadius) + "\"><title>" + Escape(q.title) + "</title></circle>";
  for (const Point& q : p.series)
    svg += "<rect class=\"fr\" x=\"" + Num(x.Map(q.x) - kMarkerSide / 2) + "\" y=\"" + Num(y.Map(q.y) - kMarkerSide / 2) + "\" width=\"" +
           Num(kMarkerSide) + "\" height=\"" + Num(kMarkerSide) + "\"><title>" + Escape(q.title) + "</title></rect>";
  svg += "</svg>";
  std::string marks;
  if (!p.points.empty() && !p.points_label.empty())
    marks += LegendItem("<circle cx=\"6\" cy=\"6\" r=\"4\" fill=\"#fff\" stroke=\"#0072B2\" stroke-width=\"1.5\"/>", p.points_label);
  if (!p.highlight_label.empty() && std::any_of(p.points.begin(), p.points.end(), [](const Point& q) { return q.highlight; }))
    marks += LegendItem("<circle cx=\"6\" cy=\"6\" r=\"4\" fill=\"#0072B2\"/>", p.highlight_label);
  if (!p.series.empty()) marks += LegendItem("<rect x=\"2\" y=\"2\" width=\"8\" height=\"8\" fill=\"#D55E00\"/>", p.series_label);
  legend = marks + legend;
  return Figure(p.title, svg, legend);
}

std::string Bars(const BarChart& c) {
  std::vector<double> ends;
  for (const Bar& b : c.bars) {
    double sum = 0;
    for (const Segment& s : b.segments) sum += std::max(0.0, s.value);
    ends.push_back(sum);
  }
  for (const Marker& m : c.markers) ends.push_back(m.value);
  const double height = kPlotTop + kBarRow * static_cast<double>(c.bars.size()) + kBarAxis;
  const Axis x = MakeAxis(ends, kBarLabelWidth, kBarWidth - kBarNoteWidth, true);
  std::string svg = SvgOpen(kBarWidth, height, c.title);
  const double y_axis = kPlotTop + kBarRow * static_cast<double>(c.bars.size());
  for (double v : x.Ticks()) {
    svg += Line(x.Map(v), kPlotTop, x.Map(v), y_axis, "grid");
    svg += Text(x.Map(v), y_axis + 14, Tick(v), "middle");
  }
  svg += Text((x.px0 + x.px1) / 2, y_axis + 32, c.axis_label, "middle");
  std::map<std::string, size_t> colour;  // legend label -> palette index, in order of first use
  std::vector<std::string> order;
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double top = kPlotTop + kBarRow * static_cast<double>(i) + (kBarRow - kBarThickness) / 2;
    svg += "<g><title>" + Escape(b.label) + "</title>" + Text(x.px0 - 6, top + kBarThickness - 4, Cut(b.label, kBarLabelChars), "end") + "</g>";
    double at = 0;
    for (const Segment& s : b.segments) {
      const double w = std::max(0.0, s.value);
      if (!s.gap) {
        if (!colour.count(s.label)) colour[s.label] = order.size(), order.push_back(s.label);
        svg += "<rect class=\"seg\" x=\"" + Num(x.Map(at)) + "\" y=\"" + Num(top) + "\" width=\"" + Num(x.Map(at + w) - x.Map(at)) +
               "\" height=\"" + Num(kBarThickness) + "\" fill=\"" + Colour(colour[s.label]) + "\"><title>" + Escape(s.label + ": " + s.text) +
               "</title></rect>";
      }
      at += w;
    }
    svg += Text(x.Map(at) + 6, top + kBarThickness - 4, b.note, "start");
  }
  svg += Line(x.px0, kPlotTop, x.px0, y_axis, "axis");
  for (const Marker& m : c.markers) svg += Line(x.Map(m.value), kPlotTop - 6, x.Map(m.value), y_axis, "limit");
  svg += "</svg>";
  std::string legend;
  for (const std::string& label : order) {
    std::string text = label;
    if (c.bars.size() == 1)
      for (const Segment& s : c.bars[0].segments)
        if (s.label == label && !s.text.empty()) text += ": " + s.text;
    legend += LegendItem("<rect x=\"1\" y=\"1\" width=\"10\" height=\"10\" fill=\"" + std::string(Colour(colour[label])) + "\"/>", text);
  }
  for (const Marker& m : c.markers) legend += LegendItem("<line class=\"limit\" style=\"stroke-dasharray:3 2\" x1=\"6\" y1=\"0\" x2=\"6\" y2=\"12\"/>", m.label);
  return Figure(c.title, svg, legend);
}

std::string Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::vector<size_t>& numeric) {
  auto is_num = [&](size_t i) { return std::find(numeric.begin(), numeric.end(), i) != numeric.end(); };
  std::string out = "<div class=\"wide\"><table><thead><tr>";
  for (const auto& h : header) out += "<th>" + Escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) out += std::string(is_num(i) ? "<td class=\"n\">" : "<td>") + Escape(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

std::string Facts(const std::vector<std::pair<std::string, std::string>>& facts) {
  std::string out = "<dl class=\"facts\">";
  for (const auto& [k, v] : facts) out += "<dt>" + Escape(k) + "</dt><dd>" + Escape(v) + "</dd>";
  return out + "</dl>\n";
}

namespace {
// The style sheet: screen and print (no colour lost, no figure or table split across pages).
constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","WenQuanYi Micro Hei","Microsoft YaHei",sans-serif;
  margin:24px auto;max-width:980px;padding:0 16px;color:#1a1a1a;line-height:1.45}
h1{font-size:1.45em;margin-bottom:.2em}
h2{font-size:1.15em;border-bottom:1px solid #ccc;padding-bottom:2px;margin-top:1.6em}
p.sub{color:#444;margin-top:0}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0;width:100%}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1em 0}
figcaption{font-weight:600;margin-bottom:.3em}
svg{max-width:100%;height:auto;font-size:12px}
svg text{fill:#222}
.grid{stroke:#e6e6e6}
.axis{stroke:#444}
.pt{fill:#fff;stroke:#0072B2;stroke-width:1.5}
.pt.hi{fill:#0072B2}
.fr{fill:#D55E00}
.front{fill:none;stroke:#D55E00;stroke-width:1.5}
.limit{stroke:#C00000;stroke-dasharray:6 4;stroke-width:1.5}
text.limit-label{fill:#C00000}
.seg{stroke:#fff;stroke-width:.5}
ul.legend{list-style:none;padding:0;margin:.2em 0 .6em;font-size:.85em}
ul.legend li{display:inline-block;margin-right:1.2em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;font-size:.9em}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0}
.note{color:#555;font-size:.85em}
.warn{color:#8a3b00;font-weight:600}
div.wide{overflow-x:auto}
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8em;background:#f6f6f6;padding:6px}
footer{margin-top:2em;color:#666;font-size:.8em;border-top:1px solid #ddd;padding-top:.4em}
@media print{
  body{margin:0;max-width:none;font-size:10pt}
  table{font-size:8pt}
  div.wide{overflow:visible}
  h2{break-after:avoid}
  figure,table,dl{break-inside:avoid}
  *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
)css";
}  // namespace

std::string Document(const std::string& lang, const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"" + Escape(lang) + "\">\n<head>\n<meta charset=\"utf-8\"/>\n" +
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>" + Escape(title) + "</title>\n<style>" +
         kStyle + "</style>\n</head>\n<body>\n" + body + "</body>\n</html>\n";
}

}  // namespace gpuplan::html
