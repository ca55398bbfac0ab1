//! The report page's inline style and script (no network: the page's Content-Security-Policy
//! allows none).

pub(super) const STYLE: &str = r#"
:root{--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--ign:#57606a;--ign-bg:#eaeef2;--ns:#9a6700;--ns-bg:#fff8c5;--err:#8250df;--err-bg:#fbefff;--line:#d0d7de;--muted:#57606a}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid var(--line);padding:12px 20px;position:sticky;top:0;z-index:5}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:17px;margin:0 0 8px}
h4{font-size:13px;margin:14px 0 6px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
main{padding:16px 20px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.muted{color:var(--muted)}
.counts{display:flex;gap:8px;flex-wrap:wrap;margin:6px 0}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.badge.passed{background:var(--pass-bg);color:var(--pass)}
.badge.failed{background:var(--fail-bg);color:var(--fail)}
.badge.ignored{background:var(--ign-bg);color:var(--ign)}
.badge.errored{background:var(--err-bg);color:var(--err)}
.filters button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:6px;padding:3px 10px;cursor:pointer}
.filters button[aria-pressed=true]{background:#0969da;color:#fff;border-color:#0969da}
section.scenario{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px;margin:0 0 18px}
table{border-collapse:collapse}
table.matrix{font-size:12px;margin-bottom:6px}
table.matrix th,table.matrix td{border:1px solid var(--line);padding:3px 5px;text-align:center}
table.matrix thead th{font-weight:600;max-width:86px;vertical-align:bottom;word-break:break-word}
table.matrix tbody th{text-align:left;white-space:nowrap;font-weight:500}
td.cell.pass{background:var(--pass-bg);color:var(--pass)}
td.cell.fail{background:var(--fail-bg);color:var(--fail);font-weight:700}
td.cell.ignored{background:var(--ign-bg);color:var(--ign);text-align:left}
td.cell.not-struck{background:var(--ns-bg);color:var(--ns)}
td.cell.errored{background:var(--err-bg);color:var(--err);text-align:left}
td.cell.na{color:var(--muted)}
.legend{font-size:12px;color:var(--muted);margin:4px 0 12px}
.legend span{margin-right:12px}
details.trial{border:1px solid var(--line);border-radius:6px;margin:8px 0;background:#fff}
details.trial>summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
details.trial[data-status=failed]>summary,details.trial[data-status=errored]>summary{background:var(--fail-bg)}
.trial-body{padding:4px 14px 12px}
.reason{white-space:pre-wrap;background:#fff8f8;border-left:3px solid var(--fail);padding:6px 10px;margin:8px 0}
.timeline{border:1px solid var(--line);border-radius:6px;padding:8px 10px;background:#fbfcfd}
.lane{display:flex;align-items:center;margin:5px 0}
.lane-label{width:120px;flex:none;font-size:12px}
.lane-label small{display:block;color:var(--muted)}
.track{position:relative;flex:1;height:24px;background:#f0f3f6;border-radius:4px}
.seg{position:absolute;top:0;bottom:0;font-size:11px;overflow:hidden;white-space:nowrap;padding:3px 4px;border-right:1px solid #fff;color:#1f2328}
.seg.setup{background:#d8dee4}.seg.scenario{background:#b6e3ff}.seg.recovery{background:#ccd6ff}.seg.oracle{background:#e6d4ff}.seg.cleanup{background:#d3f0d8}
.bar{position:absolute;top:3px;bottom:3px;background:#54aeff;border-radius:3px;overflow:hidden;min-width:2px}
.bar.end-crashed{background:#ff8182}.bar.end-timed_out,.bar.end-died{background:#d4a72c}
.bar .launch{position:absolute;left:0;top:0;bottom:0;background:rgba(0,0,0,.18)}
.bar .bar-label{position:relative;font-size:11px;padding:0 4px;white-space:nowrap;color:#0d1117}
.fault-mark{position:absolute;top:-3px;bottom:-3px;width:2px;background:var(--fail);z-index:2}
.fault-mark .flag{position:absolute;left:4px;top:-2px;font-size:11px;font-weight:700;color:var(--fail);white-space:nowrap;background:rgba(255,255,255,.85);padding:0 2px}
.axis{position:relative;height:16px;margin-left:120px;font-size:10px;color:var(--muted)}
.axis span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.axis span:first-child{transform:none}.axis span:last-child{transform:translateX(-100%)}
.tl-note{font-size:11px;color:var(--muted);margin:4px 0 0}
ul.workers{list-style:none;padding:0;margin:0}
ul.workers li{margin:6px 0}
.cp{display:inline-block;border:1px solid var(--line);border-radius:4px;padding:0 5px;margin:1px 0;font:11px ui-monospace,monospace;background:#f6f8fa}
.cp.fault{border-color:var(--fail);color:var(--fail);background:var(--fail-bg);font-weight:700}
.cp.end-crashed,.cp.end-died,.cp.end-timed_out{border-color:var(--fail);color:var(--fail)}
.cp.end-finished{border-color:var(--pass);color:var(--pass)}
.arrow{color:var(--muted);margin:0 2px}
.effect{font-size:11px;color:var(--muted);margin-right:4px}
table.kv td,table.kv th,table.verdicts td,table.verdicts th{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top;font-size:12px}
table.verdicts tr.broke td{background:var(--fail-bg)}
td.held{color:var(--pass);font-weight:700}td.broke{color:var(--fail);font-weight:700}
img.shot{max-width:100%;border:1px solid var(--line);border-radius:4px;display:block}
pre.log{background:#0d1117;color:#e6edf3;padding:8px 10px;border-radius:6px;overflow:auto;max-height:260px;white-space:pre-wrap;word-break:break-word}
.stack{display:flex;height:14px;border-radius:3px;overflow:hidden;margin:4px 0 8px}
.stack div{height:100%}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:0 24px}
@media (max-width:900px){.grid2{grid-template-columns:minmax(0,1fr)}}
.evidence-path{font-size:12px;color:var(--muted);margin-top:10px;word-break:break-all}
"#;

pub(super) const SCRIPT: &str = r#"
(function () {
  var buttons = document.querySelectorAll('button[data-show]');
  function show(filter) {
    document.body.setAttribute('data-filter', filter);
    buttons.forEach(function (b) {
      b.setAttribute('aria-pressed', String(b.getAttribute('data-show') === filter));
    });
    document.querySelectorAll('[data-status]').forEach(function (el) {
      var s = el.getAttribute('data-status');
      el.hidden = !(filter === 'all' || s === filter || (filter === 'failed' && s === 'errored'));
    });
    document.querySelectorAll('section.scenario').forEach(function (sec) {
      sec.hidden = !sec.querySelector('tr[data-status]:not([hidden])');
    });
  }
  buttons.forEach(function (b) {
    b.addEventListener('click', function () { show(b.getAttribute('data-show')); });
  });
  show('all');
})();
"#;
