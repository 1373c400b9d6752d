#!/usr/bin/env python3
"""--format html through the real binary (docs/report-html.md).

For plan, plan --pool, serving, serving --plan and fleet, in English and Chinese: the command exits as its text
form does and writes one page to stdout; the page parses as XML (every element closed) and through
html.parser with balanced tags; it names no resource to fetch (no src, href or url() off the page, no script);
the plan and serving --plan pages draw exactly one point per setup of the same command's --json; the Chinese
pages carry the Chinese words. Then the refusals: --lang fr, --lang without --format html, --format html on a
command without an HTML report: exit 1 with the flag named.

Usage: html_report_test.py GPUPLAN_BINARY SOURCE_DIR
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

VOID = {"meta", "br", "img", "link", "input", "hr"}


class Balance(html.parser.HTMLParser):
    """Tags opened and closed in order (void elements excepted)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.refs = [], [], []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset") and value and not value.startswith("#"):
                self.refs.append(f"{tag} {name}={value}")
        if tag == "script":
            self.errors.append("a <script> element")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()


class Test:
    def __init__(self, binary, source):
        self.binary, self.source, self.failures = binary, source, 0
        self.tmp = tempfile.mkdtemp(prefix="gpuplan-html-")

    def fail(self, what):
        print("FAIL:", what)
        self.failures += 1

    def run(self, args):
        p = subprocess.run([self.binary] + args, capture_output=True, cwd=self.source, timeout=500)
        return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")

    def page(self, name, args, want_rc=0):
        """Runs a command with --format html; the page checked, written to a file of its own, returned."""
        rc, out, err = self.run(args + ["--format", "html"])
        if rc != want_rc:
            self.fail(f"{name}: exit {rc}, expected {want_rc}: {err[-400:]}")
            return ""
        if not out.startswith("<!DOCTYPE html>") or out.count("<!DOCTYPE html>") != 1 or not out.rstrip().endswith("</html>"):
            self.fail(f"{name}: stdout is not one HTML document")
        path = os.path.join(self.tmp, name + ".html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(out)
        try:
            ET.fromstring(out.split("\n", 1)[1])  # after the doctype: well-formed XML
        except ET.ParseError as e:
            self.fail(f"{name}: not well-formed: {e}")
        b = Balance()
        b.feed(out)
        b.close()
        for e in b.errors + ([f"unclosed {b.stack}"] if b.stack else []):
            self.fail(f"{name}: {e}")
        for r in b.refs:
            self.fail(f"{name}: references {r}")
        for bad in ("http://", "https://", "url(", "@import", "<script"):
            if bad in out:
                self.fail(f"{name}: contains {bad}")
        if "@media print" not in out:
            self.fail(f"{name}: no print style")
        if out.count("<svg ") < 2:
            self.fail(f"{name}: fewer than two SVG plots")
        missing = re.findall(r"\[[a-z][a-z0-9_]*\]", out)
        if missing:
            self.fail(f"{name}: words missing from data/report_strings.csv: {missing[:5]}")
        return out

    def points_match_json(self, name, args, page):
        rc, out, _ = self.run(args + ["--json"])
        plans = json.loads(out)["plans"]
        priced = [p for p in plans if p.get("cost_usd", 0) is not None]
        drawn = page.count('<circle class="pt')
        # serving --plan draws two plots (TTFT and TPOT) of every setup; plan one (priced setups).
        want = 2 * len(plans) if "--plan" in args else len(priced)
        if drawn != want or want == 0:
            self.fail(f"{name}: {drawn} points drawn, {want} expected from --json")

    def main(self):
        ex = lambda f: os.path.join("examples", f)
        plan = [ "plan", ex("7b-full-finetune-1node.yaml")]
        splan = ["serving", ex("serving-plan-llama3-8b.yaml"), "--plan"]
        cases = [
            ("plan", plan, 0),
            ("plan-pool", ["plan", ex("pool-32b-h800-h20.yaml"), "--pool", ex("pool-h800-h20.yaml")], 0),
            ("serving", ["serving", ex("serving-llama3-8b-vllm.yaml")], 0),
            ("serving-nofit", ["serving", ex("serving-llama3-70b-24gb.yaml")], 2),
            ("serving-plan", splan, 0),
            ("fleet", ["fleet", ex("fleet-lab.yaml")], 0),
        ]
        zh_words = {"plan": ["帕累托前沿", "显存", "训练时长", "成本"], "plan-pool": ["混合卡池", "流水线"],
                    "serving": ["显存", "时延", "吞吐"], "serving-plan": ["时延", "吞吐", "每百万输出 token 成本"],
                    "fleet": ["集群利用率", "基线"]}
        for name, args, rc in cases:
            en = self.page(name, args, rc)
            zh = self.page(name + "-zh", args + ["--lang", "zh"], rc)
            if en and '<html lang="en">' not in en:
                self.fail(f"{name}: lang is not en")
            if zh and '<html lang="zh">' not in zh:
                self.fail(f"{name}-zh: lang is not zh")
            for w in zh_words.get(name, []):
                if zh and w not in zh:
                    self.fail(f"{name}-zh: no {w}")
            if name in ("plan", "serving-plan") and en:
                self.points_match_json(name, args, en)
        # Refusals: exit 1, the flag named, nothing on stdout.
        for args, flag in ((plan + ["--format", "html", "--lang", "fr"], "--lang"),
                           (plan + ["--lang", "zh"], "--lang"),
                           (["memory", ex("7b-full-finetune-1node.yaml"), "--format", "html"], "--format"),
                           (["fleet", ex("fleet-lab.yaml"), "--format", "md"], "--format")):
            rc, out, err = self.run(args)
            if rc != 1 or flag not in err or out:
                self.fail(f"{' '.join(args)}: exit {rc}, stderr {err.strip()[:200]!r}, expected exit 1 naming {flag}")
        if self.failures:
            print(f"pages kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp)
        print("FAILED" if self.failures else "ok", f"({self.failures} failures)")
        return 1 if self.failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(Test(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])).main())
