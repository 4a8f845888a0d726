//! The page's fixed parts: its styles, the arrow and hatch definitions, the legend and the
//! job filter's script. A page of a run that held carries nothing about violations.

pub(super) const CSS: &str = r#"body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:12px 14px;color:#1a202c;background:#fff}
h1{font-size:19px;margin:0 0 4px;font-weight:600}
.verdict{display:inline-block;padding:1px 9px;border-radius:4px;color:#fff;font-weight:700;margin-right:10px;letter-spacing:.03em}
.verdict-held{background:#2f855a}.verdict-violated{background:#c53030}.verdict-other{background:#b7791f}
.subtitle{margin:0 0 10px;color:#4a5568}
.subtitle code{background:#f7fafc;border:1px solid #e2e8f0;padding:1px 5px;border-radius:3px;font-size:12px}
.controls{margin:8px 0;display:flex;gap:18px;align-items:center;flex-wrap:wrap}
.controls select{font:inherit;padding:1px 4px}
.stats{color:#4a5568;font-size:12px}
.elided{color:#7b341e;background:#fffaf0;border:1px solid #fbd38d;padding:4px 8px;border-radius:4px;max-width:1100px}
.chart{display:flex;border:1px solid #cbd5e0;border-radius:6px;overflow:hidden;align-items:flex-start}
.labels{flex:none;border-right:1px solid #cbd5e0}
.scroll{overflow-x:auto;flex:1 1 auto}
svg{display:block}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.lane-bg{fill:#fff}.lane-bg.alt{fill:#f8fafc}
.lane-sep{stroke:#e2e8f0}
.node-name{font-size:14px;font-weight:700;fill:#1a202c}
.node-kind{font-size:10px;fill:#718096}
.sub-label{font-size:9px;fill:#718096;text-anchor:end}
.axis-title{font-size:10px;fill:#718096}
.grid{stroke:#edf2f7}
.tick{font-size:10px;fill:#718096;text-anchor:middle}
.clock-band{fill:#f1f5f9}
.clock{fill:none;stroke:#4a5568;stroke-width:1.3}
.lease-coord rect{fill:#90cdf4;stroke:#2b6cb0;stroke-width:1}
.lease-holder rect{fill:#9ae6b4;stroke:#2f855a;stroke-width:1}
.tickmark{stroke:#1a365d;stroke-width:1;opacity:.6}
.bar-label{font-size:8.5px;fill:#1a202c;pointer-events:none}
.bar-note{font-size:8.5px;font-style:italic;fill:#2b6cb0;pointer-events:none}
.jeopardy rect{fill:url(#hatch);stroke:#dd6b20;stroke-width:1.2}
.jeop-label{font-size:8.5px;font-weight:700;fill:#7b341e;pointer-events:none}
.fault rect{fill:#e53e3e;fill-opacity:.07;stroke:#e53e3e;stroke-opacity:.45;stroke-dasharray:4 3}
.fault.pause rect{fill:#805ad5;stroke:#805ad5}
.fault.crash rect{fill:#1a202c;fill-opacity:.12;stroke:#1a202c}
.fault.slow rect{fill:#d69e2e;stroke:#b7791f}
.fault.network rect{fill:#e53e3e;fill-opacity:.12}
.fault-label{font-size:9px;fill:#9b2c2c;pointer-events:none}
.fault.instant line{stroke:#c53030;stroke-width:2}
.msg path.v{stroke:#718096;stroke-width:1.1;fill:none;marker-end:url(#ah)}
.msg path.hit{stroke:transparent;stroke-width:7;fill:none}
.msg.dropped path.v{stroke:#c53030;marker-end:url(#xx)}
.msg.duplicated path.v{stroke:#6b46c1;marker-end:url(#ah-dup)}
.msg.late path.v{stroke:#b7791f;stroke-width:1.6;stroke-dasharray:6 3;marker-end:url(#ah-late)}
.msg .release{fill:#fff;stroke:#b7791f;stroke-width:1.5}
.msg:hover path.v{stroke-width:2.6}
.note{fill:#a0aec0;stroke:#fff;stroke-width:.8}
.stmt{font:9px ui-monospace,monospace;fill:#4a5568}
.txbar{fill:#bee3f8;stroke:#2b6cb0;stroke-width:.8}.tx.aborted .txbar{fill:#fed7d7;stroke:#c53030}
.txwait{fill:#e53e3e}.txstep{stroke:#2b6cb0;stroke-width:1.2}.txn{font:8px ui-monospace,monospace;fill:#2b6cb0;text-anchor:middle}.txfail{font:9px system-ui,sans-serif;fill:#c53030}
.note.grant{fill:#2b6cb0}.note.renew{fill:#63b3ed}.note.claim{fill:#38a169}.note.ok{fill:#276749}
.note.bad{fill:#e53e3e}.note.jeop{fill:#dd6b20}.note.commit{fill:#553c9a}.note.send-effect{fill:#319795}
.effect .d{stroke:#1a202c;stroke-width:.8}
.effect.applied .d{fill:#48bb78}.effect.duplicate .d{fill:#b794f4}.effect.rejected .d{fill:#feb2b2;stroke:#c53030}
.effect .x{stroke:#c53030;stroke-width:1.8}
.effect .stem{stroke:#a0aec0;stroke-width:.6}
.effect text{font-size:8.5px;fill:#2d3748}
.effect.rejected text{fill:#c53030;font-weight:700}
.off{display:none}
.legend{margin-top:12px;display:flex;flex-wrap:wrap;gap:6px 18px;font-size:12px;color:#2d3748;max-width:1300px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.legend svg{display:inline-block}
.lg-coord{fill:#90cdf4;stroke:#2b6cb0}.lg-holder{fill:#9ae6b4;stroke:#2f855a}
.lg-jeop{fill:url(#hatch);stroke:#dd6b20}.lg-fault{fill:#e53e3e;fill-opacity:.1;stroke:#e53e3e;stroke-dasharray:4 3}
.lg-msg{stroke:#718096;stroke-width:1.3;marker-end:url(#ah)}
.lg-dropped{stroke:#c53030;stroke-width:1.3;marker-end:url(#xx)}
.lg-dup{stroke:#6b46c1;stroke-width:1.3;marker-end:url(#ah-dup)}
.lg-late{stroke:#b7791f;stroke-width:1.6;stroke-dasharray:6 3;marker-end:url(#ah-late)}
.lg-applied{fill:#48bb78;stroke:#1a202c}.lg-dupe{fill:#b794f4;stroke:#1a202c}.lg-rejected{fill:#feb2b2;stroke:#c53030}
.lg-clock{fill:none;stroke:#4a5568;stroke-width:1.3}
"#;

/// The violation's styles, only on a page that has one (a page of a run that held never
/// mentions the word).
pub(super) const CSS_VIOLATION: &str = r#".violation-box{border:2px solid #e53e3e;background:#fff5f5;padding:8px 12px;border-radius:6px;margin:8px 0;max-width:1100px}
.violation-box .inv{font-weight:700;color:#c53030;font-size:15px}
.violation-box .where{color:#742a2a}
.violation-box .sentence{margin-top:2px}
.violation-box .demand{color:#4a5568;font-size:12px;margin-top:2px}
.violation .vline{stroke:#e53e3e;stroke-width:2;stroke-dasharray:7 4}
.violation circle{fill:#fff5f5;fill-opacity:.6;stroke:#e53e3e;stroke-width:3}
.violation text{font-size:12px;font-weight:700;fill:#c53030;paint-order:stroke;stroke:#fff;stroke-width:3px}
.lg-viol{fill:#fff5f5;stroke:#e53e3e;stroke-width:3}
"#;

/// Scrolls the timeline to the first violation when it is off screen.
pub(super) const SCRIPT_VIOLATION: &str = r#"var m=document.querySelector('svg.timeline .violation'),sc=document.querySelector('.scroll');
if(m&&sc){var x=parseFloat(m.getAttribute('data-x'));if(x>sc.clientWidth-80){sc.scrollLeft=x-sc.clientWidth*0.7;}}
"#;

pub(super) const DEFS: &str = r##"<defs>
<marker id="ah" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#718096"/></marker>
<marker id="ah-late" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#b7791f"/></marker>
<marker id="ah-dup" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#6b46c1"/></marker>
<marker id="xx" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="9" markerHeight="9" orient="auto"><path d="M1,1 L9,9 M9,1 L1,9" stroke="#c53030" stroke-width="2.2"/></marker>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#feebc8"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ed8936" stroke-width="2.5"/></pattern>
</defs>
"##;

pub(super) const LEGEND: &str = r#"<div class="legend">
<span><svg width="34" height="12"><rect class="lg-coord" x="1" y="1" width="32" height="10"/></svg>coordinator&#8217;s grant: the authoritative lease (its clock, shown in true time), ticks at renewals</span>
<span><svg width="34" height="12"><rect class="lg-holder" x="1" y="1" width="32" height="10"/></svg>what the holder believed it had (deadline on its own clock), ticks at acknowledged heartbeats</span>
<span><svg width="34" height="12"><rect class="lg-jeop" x="1" y="1" width="32" height="10"/></svg>jeopardy: the holder cannot confirm its lease and must not act</span>
<span><svg width="34" height="14"><rect class="lg-fault" x="1" y="1" width="32" height="12"/></svg>fault: cut link, pause, crash, slowness, lossy network; a red line: a clock step or drift change</span>
<span><svg width="40" height="12"><line class="lg-msg" x1="2" y1="6" x2="36" y2="6"/></svg>message, from send to delivery</span>
<span><svg width="40" height="12"><line class="lg-dropped" x1="2" y1="6" x2="30" y2="6"/></svg>dropped (cut, lost, fault plan) or lost at a crashed node</span>
<span><svg width="40" height="12"><line class="lg-dup" x1="2" y1="6" x2="36" y2="6"/></svg>duplicated (two deliveries)</span>
<span><svg width="40" height="12"><line class="lg-late" x1="2" y1="6" x2="36" y2="6"/></svg>late: held by the fault plan, released at the ring</span>
<span><svg width="14" height="12"><path class="lg-applied" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect applied</span>
<span><svg width="14" height="12"><path class="lg-dupe" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect duplicate (first result returned)</span>
<span><svg width="14" height="12"><path class="lg-rejected" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect rejected: fenced (stale token) or unauthorized</span>
"#;

/// The legend's entry for a violation, only on a page that has one.
pub(super) const LEGEND_VIOLATION: &str = r#"<span><svg width="20" height="20"><circle class="lg-viol" cx="10" cy="10" r="7"/></svg>violation: where and when the invariant broke</span>
"#;

/// The end of the legend.
pub(super) const LEGEND_END: &str = r#"<span><svg width="34" height="12"><polyline class="lg-clock" points="1,9 12,9 12,3 33,5"/></svg>local clock &#8722; true time (offset, drift, steps)</span>
<span>dots: journal events (blue grant, green claim/accepted, orange jeopardy, red refusal); hover any mark for its trace line</span>
</div>
"#;

/// The job filter: hides every mark whose `data-job` is not the chosen job.
pub(super) const SCRIPT: &str = r#"<script>
(function(){
var s=document.getElementById('job-filter');
if(s){s.addEventListener('change',function(){
var v=s.value,es=document.querySelectorAll('svg.timeline [data-job]');
for(var i=0;i<es.length;i++){var e=es[i];e.classList.toggle('off',v!=='all'&&e.getAttribute('data-job')!==v);}
});}
"#;

/// The end of the script.
pub(super) const SCRIPT_END: &str = "})();\n</script>\n";
