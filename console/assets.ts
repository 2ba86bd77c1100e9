/**
 * The console's static assets, all served from this package (nothing is fetched from the
 * internet): the style sheet and the page script below, and htmx from node_modules (the pinned
 * `htmx.org` dependency). Each is served under a path holding its content hash, so it can be
 * cached for good.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const CSS = `
:root{--bg:#f7f7f8;--fg:#1c1d21;--muted:#62656e;--line:#dedfe3;--card:#fff;--accent:#2457c5;--ok:#17803d;--bad:#c2261b;--warn:#a86200;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#15161a;--fg:#e6e6ea;--muted:#9a9ca6;--line:#2c2e35;--card:#1d1f24;--accent:#7aa2ff;--ok:#4cc27a;--bad:#ff6b5e;--warn:#e3a44b}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
a{color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:var(--card);padding:6px 10px;z-index:9}
header{display:flex;flex-wrap:wrap;gap:4px 18px;align-items:center;padding:10px 20px;background:var(--card);border-bottom:1px solid var(--line)}
header .brand{font-weight:700;font-size:17px;text-decoration:none;color:var(--fg)}
header nav{display:flex;flex-wrap:wrap;gap:2px}
header nav a{padding:6px 10px;border-radius:6px;text-decoration:none;color:var(--fg)}
header nav a[aria-current=page]{background:var(--bg);font-weight:600;box-shadow:inset 0 -2px 0 var(--accent)}
header .target{margin-left:auto;color:var(--muted);font-size:13px}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;border:1px solid var(--line);white-space:nowrap}
.badge.ro{color:var(--warn)}.badge.rw{color:var(--ok)}
main{max-width:1200px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:6px 0 14px}h2{font-size:17px;margin:22px 0 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px;margin:0 0 16px}
main>.card,#live>.card,#job{margin:0 0 16px}
.actions{margin:0 0 14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px;min-width:0}
.card h2{margin-top:0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right}
td time{white-space:nowrap}
.mono,code,pre{font-family:var(--mono);font-size:13px}
pre{background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:10px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-word}
.muted{color:var(--muted)}
.st{font-weight:600}.st-succeeded{color:var(--ok)}.st-failed,.st-crashed{color:var(--bad)}.st-retrying,.st-running{color:var(--warn)}.st-cancelled{color:var(--muted)}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
.kv dt{color:var(--muted)}.kv dd{margin:0;min-width:0;overflow-wrap:anywhere}
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;margin:0 0 14px}
label{display:flex;flex-direction:column;font-size:13px;color:var(--muted);gap:3px}
input,select,button,textarea{font:inherit;color:inherit}
input,select,textarea{padding:6px 8px;border:1px solid var(--line);border-radius:6px;background:var(--card);min-height:36px}
button,.button{display:inline-block;padding:7px 14px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none;min-height:36px;font-weight:600}
button.secondary,.button.secondary{background:transparent;color:var(--accent)}
button.danger{background:var(--bad);border-color:var(--bad)}
button:disabled{opacity:.5;cursor:not-allowed}
.actions{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.actions form{margin:0}
.flash{padding:10px 14px;border-radius:8px;border:1px solid var(--line);background:var(--card);margin:0 0 14px}
.flash.ok{border-color:var(--ok)}.flash.bad{border-color:var(--bad)}
.timeline{list-style:none;margin:0;padding:0 0 0 18px;border-left:2px solid var(--line)}
.timeline li{position:relative;padding:0 0 14px 10px}
.timeline li::before{content:"";position:absolute;left:-25px;top:5px;width:12px;height:12px;border-radius:50%;background:var(--muted);border:2px solid var(--card)}
.timeline li.o-succeeded::before{background:var(--ok)}.timeline li.o-failed::before,.timeline li.o-crashed::before{background:var(--bad)}.timeline li.o-retrying::before{background:var(--warn)}
.timeline li.o-done::before,.timeline li.o-received::before{background:var(--ok)}.timeline li.o-timed_out::before{background:var(--warn)}.timeline li.o-waiting::before,.timeline li.o-sleeping::before,.timeline li.o-running::before{background:var(--accent)}
.st-waiting,.st-sleeping{color:var(--accent)}.st-received,.st-done{color:var(--ok)}.st-timed_out{color:var(--warn)}
.chart{display:block;width:100%;height:120px}
.chart .s{fill:var(--ok)}.chart .f{fill:var(--bad)}.chart .r{fill:var(--warn)}.chart .axis{stroke:var(--line)}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:13px;color:var(--muted);margin:6px 0 0}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.legend i.s{background:var(--ok)}.legend i.r{background:var(--warn)}.legend i.f{background:var(--bad)}
.ns-succeeded{--ns:#2e9e4f;--nt:#fff}.ns-failed{--ns:#d43a2f;--nt:#fff}.ns-upstream_failed{--ns:#f0922e;--nt:#1c1d21}.ns-skipped{--ns:#f2a7c8;--nt:#1c1d21}
.ns-running{--ns:#2f6fdb;--nt:#fff}.ns-queued{--ns:#a8c5f4;--nt:#1c1d21}.ns-pending,.ns-none{--ns:transparent;--nt:var(--fg)}.ns-cancelled{--ns:#555a63;--nt:#fff}
.legend i.sw{background:var(--ns);border:1px solid var(--line)}.legend i.ns-none{border-style:dashed}
table.pgrid{width:auto;border-collapse:separate;border-spacing:3px}
.pgrid th,.pgrid td{padding:0;border:0;vertical-align:middle}
.pgrid th[scope=row]{padding-right:12px;text-transform:none;letter-spacing:0;font-size:14px;font-weight:400;color:var(--fg)}
.pgrid thead th{writing-mode:vertical-rl;transform:rotate(180deg);text-transform:none;letter-spacing:0;font-size:11px;padding:4px 0}
.pgrid .cell{display:block;width:18px;height:18px;border-radius:3px;background:var(--ns);border:1px solid var(--line)}
.pgrid .run .cell{height:26px}.pgrid .ns-none{border-style:dashed}.pgrid a.cell:hover{outline:2px solid var(--accent)}
.pgraph{display:block}.pgraph .node rect{fill:var(--ns);stroke:var(--muted)}.pgraph text{fill:var(--nt);font-size:13px}.pgraph .nn{font-weight:600}
.pgraph .edge{fill:none;stroke:var(--muted);stroke-width:1.5}.pgraph .arrow{fill:var(--muted)}.pgraph a:hover rect,.pgraph a:focus rect{stroke:var(--accent);stroke-width:3}
.st-upstream_failed{color:var(--warn)}.st-queued{color:var(--accent)}.st-skipped,.st-pending{color:var(--muted)}
.stat{font-size:26px;font-weight:700;font-variant-numeric:tabular-nums}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:10px}
.stats div{min-width:0}
progress{width:100%;height:14px}
.pager{display:flex;gap:10px;margin:12px 0}
details summary{cursor:pointer}
footer{color:var(--muted);font-size:12px;text-align:center;padding:20px}
@media (max-width:640px){main{padding:12px}header{padding:8px 12px}header .target{margin-left:0;width:100%}.kv{grid-template-columns:1fr}.kv dt{margin-top:6px}th,td{padding:5px 6px}}
`;

/**
 * The page script: times in the viewer's zone (UTC stays on hover), and the same after every
 * htmx swap. No framework; the pages work without it (UTC times, full-page forms).
 */
const JS = `
(function(){
  var pad=function(n){return n<10?'0'+n:''+n};
  function zone(d){try{return new Intl.DateTimeFormat(undefined,{timeZoneName:'short'}).formatToParts(d).filter(function(p){return p.type==='timeZoneName'})[0].value}catch(e){return ''}}
  function local(root){
    var ts=(root||document).querySelectorAll('time[datetime]');
    for(var i=0;i<ts.length;i++){
      var t=ts[i]; if(t.dataset.local) continue;
      var d=new Date(t.getAttribute('datetime')); if(isNaN(d)) continue;
      t.textContent=d.getFullYear()+'-'+pad(d.getMonth()+1)+'-'+pad(d.getDate())+' '+pad(d.getHours())+':'+pad(d.getMinutes())+':'+pad(d.getSeconds())+' '+zone(d);
      t.dataset.local='1';
    }
  }
  document.addEventListener('DOMContentLoaded',function(){local(document)});
  document.addEventListener('htmx:afterSettle',function(e){local(e.target)});
})();
`;

export interface Asset {
  readonly path: string;
  readonly type: string;
  readonly body: Buffer;
}

function asset(name: string, ext: string, type: string, body: Buffer): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { path: `/assets/${name}.${hash}.${ext}`, type, body };
}

let cache: { css: Asset; js: Asset; htmx: Asset } | undefined;

/** The assets (read once). @throws when the htmx.org package is missing (run `npm install`). */
export function assets(): { css: Asset; js: Asset; htmx: Asset } {
  if (cache === undefined) {
    const file = createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js');
    cache = {
      css: asset('console', 'css', 'text/css; charset=utf-8', Buffer.from(CSS)),
      js: asset('console', 'js', 'text/javascript; charset=utf-8', Buffer.from(JS)),
      htmx: asset('htmx', 'js', 'text/javascript; charset=utf-8', readFileSync(file)),
    };
  }
  return cache;
}
