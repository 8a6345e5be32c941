// hcat review: the page's only script (no build step). Labels and decisions are POSTed as JSON; the server answers
// {status, message}; a 409 carries the label another tab saved first, and nothing is overwritten without asking.
"use strict";
const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

function say(text, kind = "ok") {
  const s = $("#status");
  s.textContent = text;
  s.className = kind;
}

function rater() {
  return ($("#rater").value || "").trim();
}

$("#rater").addEventListener("change", () => {
  document.cookie = "hcat_rater=" + encodeURIComponent(rater()) + "; path=/; SameSite=Strict";
  location.reload();
});

async function post(url, body) {
  let res;
  try {
    res = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  } catch (e) {
    return {status: "error", message: "the review server did not answer (" + e + "): nothing was saved, try again"};
  }
  const data = await res.json().catch(() => ({status: "error", message: "the server answered " + res.status}));
  data.http = res.status;
  return data;
}

// ---------------------------------------------------------------- labelling
const item = $("#item");
let focusIdx = 0;

function dims() { return $$("fieldset.dim"); }

function focusDim(i) {
  const all = dims();
  if (!all.length) return;
  focusIdx = Math.max(0, Math.min(i, all.length - 1));
  all.forEach((d, j) => d.classList.toggle("focus", j === focusIdx));
  all[focusIdx].focus({preventScroll: false});
}

function go(delta) {
  const i = Number(item.dataset.index) + delta;
  if (i < 0 || i >= Number(item.dataset.n)) { say(i < 0 ? "this is the first answer" : "this is the last answer in the queue"); return; }
  location.href = "/label?item=" + i + (item.dataset.queue ? "&queue=" + encodeURIComponent(item.dataset.queue) : "");
}

async function saveLabel(fs, value, force) {
  if (!rater()) { say("type your rater name at the top right first", "bad"); $("#rater").focus(); return false; }
  const body = {rater: rater(), case_id: item.dataset.case, system_id: item.dataset.system, dimension: fs.dataset.dimension,
                label: Number(value), scale: fs.dataset.scale, comment: $("input.note", fs).value || null,
                seen: force !== undefined ? force : fs.dataset.seen};
  const r = await post("/api/labels", body);
  if (r.status === "saved") {
    fs.dataset.seen = r.row_hash;
    $$("button.choice", fs).forEach(b => b.classList.toggle("chosen", b.dataset.value === String(value)));
    $(".saved", fs).textContent = "your label: " + value + " (" + r.message + ")";
    fs.classList.add("done");
    say(fs.dataset.dimension + " = " + value + " saved");
    return true;
  }
  if (r.status === "conflict") {
    const keep = !confirm(r.message + "\n\nThe other label: " + r.current.label + (r.current.comment ? " (" + r.current.comment + ")" : "") +
                          "\nYours: " + value + "\n\nOK = save yours over it, Cancel = keep the other label");
    if (keep) {
      fs.dataset.seen = r.current.row_hash;
      $$("button.choice", fs).forEach(b => b.classList.toggle("chosen", b.dataset.value === String(r.current.label)));
      $(".saved", fs).textContent = "your label: " + r.current.label + " (from another tab)";
      say("kept the label saved in the other tab", "bad");
      return true;
    }
    return saveLabel(fs, value, r.current.row_hash);
  }
  say(r.message || "not saved", "bad");
  return false;
}

async function label(value) {
  const all = dims();
  const fs = all[focusIdx];
  const ok = $$("button.choice", fs).some(b => b.dataset.value === String(value));
  if (!ok) { say("no label " + value + " on the " + fs.dataset.scale + " scale of " + fs.dataset.dimension, "bad"); return; }
  if (!(await saveLabel(fs, value))) return;
  if (fs.classList.contains("optional")) {  // an optional dimension never moves the page on: back to what is left to label
    const left = all.findIndex(d => !d.classList.contains("done") && !d.classList.contains("optional"));
    if (left >= 0) focusDim(left);
    return;
  }
  const required = all.filter(d => !d.classList.contains("optional"));
  const next = all.findIndex((d, j) => j > focusIdx && !d.classList.contains("done") && !d.classList.contains("optional"));
  if (next >= 0) focusDim(next);
  else if (required.every(d => d.classList.contains("done"))) setTimeout(() => go(1), 150);
}

if (item) {
  dims().forEach((fs, j) => {
    if ($(".saved", fs).textContent.trim()) fs.classList.add("done");
    fs.addEventListener("focusin", () => { focusIdx = j; dims().forEach((d, k) => d.classList.toggle("focus", k === j)); });
    $$("button.choice", fs).forEach(b => b.addEventListener("click", () => { focusIdx = j; label(b.dataset.value); }));
  });
  const first = dims().findIndex(d => !d.classList.contains("done") && !d.classList.contains("optional"));
  focusDim(first >= 0 ? first : 0);
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select")) {
      if (e.key === "Escape" || e.key === "Enter") { e.preventDefault(); e.target.blur(); focusDim(focusIdx); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^[0-9]$/.test(e.key)) { e.preventDefault(); label(e.key); }
    else if (e.key === "j" || e.key === "ArrowRight") go(1);
    else if (e.key === "k" || e.key === "ArrowLeft") go(-1);
    else if (e.key === "n") { e.preventDefault(); $("input.note", dims()[focusIdx]).focus(); }
    else if (e.key === "Tab") { e.preventDefault(); focusDim((focusIdx + (e.shiftKey ? -1 : 1) + dims().length) % dims().length); }
  });
}

// ---------------------------------------------------------------- curation
async function decide(tr, action, reason, edits) {
  if (!rater()) { say("type your rater name at the top right first", "bad"); $("#rater").focus(); return; }
  const r = await post("/api/curation", {rater: rater(), version: tr.dataset.version, case_id: tr.dataset.case, action, reason: reason || "", edits: edits || {}});
  if (r.status !== "saved") { say(r.message, "bad"); return; }
  say(tr.dataset.case + ": " + action + " saved");
  location.reload();
}

$$("#cases tr[data-case]").forEach(tr => {
  $(".accept", tr).addEventListener("click", () => decide(tr, "accept"));
  $(".reject", tr).addEventListener("click", () => {
    const box = $("input.reason", tr);
    if (box.hidden) { box.hidden = false; box.focus(); return; }
    decide(tr, "reject", box.value);
  });
  $("input.reason", tr).addEventListener("keydown", (e) => { if (e.key === "Enter") decide(tr, "reject", e.target.value); });
  $(".open-edit", tr).addEventListener("click", () => { $(".edit", tr).hidden = false; $(".edit-query", tr).focus(); });
  $(".save-edit", tr).addEventListener("click", () => {
    const edits = {};  // only what changed: an untouched field is not an edit
    if ($(".edit-query", tr).value !== $(".edit-query", tr).defaultValue) edits.query = $(".edit-query", tr).value;
    if ($(".edit-reference", tr).value !== $(".edit-reference", tr).defaultValue) edits.reference_answer = $(".edit-reference", tr).value;
    if (!Object.keys(edits).length) { say("nothing changed: edit the question or the reference first", "bad"); return; }
    decide(tr, "edit", "", edits);
  });
  const undo = $(".undo", tr);
  if (undo) undo.addEventListener("click", () => decide(tr, "undo"));
});

const freezeButton = $("#freeze");
if (freezeButton) freezeButton.addEventListener("click", async () => {
  if (!rater()) { say("type your rater name at the top right first", "bad"); return; }
  const out = $("#freeze-result");
  out.textContent = "checking the cases (format and validity) …";
  freezeButton.disabled = true;
  const r = await post("/api/curation/freeze", {rater: rater(), version: freezeButton.dataset.version, new_version: $("#new-version").value.trim()});
  freezeButton.disabled = false;
  if (r.status === "frozen") {
    out.textContent = "frozen: version " + r.version + " (" + r.n_cases + " cases, source " + r.source + ", sha256 " + r.content_sha256.slice(0, 16) + "…)";
    say("curated version " + r.version + " frozen");
  } else {
    out.textContent = r.message + (r.problems ? "\n" + r.problems.join("\n") : "");
    say(r.message, "bad");
  }
});

const sampleButton = $("#start-sample");
if (sampleButton) sampleButton.addEventListener("click", async () => {
  if (!rater()) { say("type your rater name at the top right first", "bad"); return; }
  const r = await post("/api/curation/sample", {rater: rater(), version: sampleButton.dataset.version});
  if (r.status === "drawn") location.reload(); else say(r.message, "bad");
});

$$("#kinds button.leave-out").forEach(b => b.addEventListener("click", async () => {
  if (!rater()) { say("type your rater name at the top right first", "bad"); return; }
  const tr = b.closest("tr");
  const reason = prompt("Why leave the kind " + tr.dataset.kind + " out of the signed set?");
  if (!reason) return;
  const r = await post("/api/curation/leave-out", {rater: rater(), version: tr.dataset.version, kind: tr.dataset.kind, reason});
  if (r.status === "left out") location.reload(); else say(r.message, "bad");
}));

// ---------------------------------------------------------------- one case a screen (/curate/case)
const one = $("#case");

function caseUrl(id) { return "/curate/case?version=" + encodeURIComponent(one.dataset.version) + "&case=" + encodeURIComponent(id); }

function goCase(id, what) {
  if (!id) { say(what, "ok"); return; }
  location.href = caseUrl(id);
}

async function decideOne(action, reason, edits) {
  if (!rater()) { say("type your rater name at the top right first", "bad"); $("#rater").focus(); return; }
  const chosen = $("button.difficulty.chosen");
  const offered = $("#proposal");  // the repair on screen, recorded with whatever is decided (taken as is, or not)
  const proposal = offered ? {kind: offered.dataset.kind, edits: JSON.parse(offered.dataset.edits)} : null;
  const r = await post("/api/curation", {rater: rater(), version: one.dataset.version, case_id: one.dataset.case, action, reason: reason || "",
                                         edits: edits || {}, difficulty: chosen ? chosen.dataset.value : null,
                                         scoring_notes: $("#scoring-notes").value || "", proposal});
  if (r.status !== "saved") { say(r.message, "bad"); return; }
  say(one.dataset.case + ": " + action + " saved");
  if (action === "undo") location.reload();
  // the order is refit on every decision: the next case is the top of the new order, not the one this screen was given
  else if (Number(one.dataset.othersLeft) > 0) location.href = "/curate/case?version=" + encodeURIComponent(one.dataset.version);
  else say("saved: that was the last case left to review", "ok");
}

function saveEditOne() {
  const q = $("#edit-query"), ref = $("#edit-reference"), edits = {};
  if (q.value !== q.defaultValue) edits.query = q.value;
  if (ref.value !== ref.defaultValue) edits.reference_answer = ref.value;
  const opts = $("#edit-options");  // a multiple-choice case: its options, one a line
  if (opts && opts.value !== opts.defaultValue) edits.options = opts.value.split("\n").map(o => o.trim()).filter(Boolean);
  if (!Object.keys(edits).length) { say("nothing changed: edit the question, the reference or the options first", "bad"); return; }
  decideOne("edit", "", edits);
}

if (one) {
  $("#accept").addEventListener("click", () => decideOne("accept"));
  $("#reject").addEventListener("click", () => { const box = $("#reason"); if (box.hidden) { box.hidden = false; box.focus(); } else decideOne("reject", box.value); });
  $("#edit").addEventListener("click", () => { $("#edit-box").hidden = false; $("#edit-query").focus(); });
  $("#save-edit").addEventListener("click", saveEditOne);
  if ($("#undo")) $("#undo").addEventListener("click", () => decideOne("undo"));
  const takeProposal = () => { const p = $("#proposal"); if (p) decideOne("edit", "", JSON.parse(p.dataset.edits)); };
  if ($("#take-proposal")) $("#take-proposal").addEventListener("click", takeProposal);
  $$("button.difficulty").forEach(b => b.addEventListener("click", () => {
    const on = !b.classList.contains("chosen");
    $$("button.difficulty").forEach(x => x.classList.remove("chosen"));
    b.classList.toggle("chosen", on);
  }));
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select")) {
      if (e.key === "Escape") { e.preventDefault(); e.target.blur(); return; }
      if (e.key !== "Enter" || e.shiftKey) return;
      if (e.target.id === "edit-options") return;  // Enter starts the next option; the button saves
      if (e.target.id === "reason") { e.preventDefault(); decideOne("reject", e.target.value); }
      else if (e.target.closest("#edit-box")) { e.preventDefault(); saveEditOne(); }
      else if (e.target.id === "scoring-notes") { e.preventDefault(); e.target.blur(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k === "a") { e.preventDefault(); decideOne("accept"); }
    else if (k === "r") { e.preventDefault(); $("#reason").hidden = false; $("#reason").focus(); }
    else if (k === "e") { e.preventDefault(); $("#edit-box").hidden = false; $("#edit-query").focus(); }
    else if (k === "u" && $("#undo")) { e.preventDefault(); decideOne("undo"); }
    else if (k === "p" && $("#proposal")) { e.preventDefault(); takeProposal(); }
    else if (k === "s") { e.preventDefault(); $("#scoring-notes").focus(); }
    else if (/^[123]$/.test(k)) { e.preventDefault(); $$("button.difficulty")[Number(k) - 1].click(); }
    else if (k === "j" || k === "ArrowRight") goCase(one.dataset.nextAny, "this is the last case");
    else if (k === "k" || k === "ArrowLeft") goCase(one.dataset.prev, "this is the first case");
  });
}

// ---------------------------------------------------------------- flags: confirm or overturn a counted failure
$$("tr.flag button").forEach(b => b.addEventListener("click", async () => {
  const tr = b.closest("tr.flag");
  if (!rater()) { say("type your rater name at the top right first", "bad"); $("#rater").focus(); return; }
  const r = await post("/api/flags", {rater: rater(), flag_id: tr.dataset.flag, decision: b.dataset.decision,
                                      reason: $("input.why", tr).value || ""});
  if (r.status === "saved") {
    tr.className = "flag " + b.dataset.decision;
    $(".status", tr).textContent = r.message + (r.review.reason ? ": " + r.review.reason : "");
    say(tr.dataset.gate + " / " + tr.dataset.case + ": " + r.message);
  } else {
    say(r.message || "not saved", "bad");
  }
}));

// ---------------------------------------------------------------- release sign-off: the rater signs, in a role, on this evidence
if ($("#sign")) {
  $("#sign").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!rater()) { say("type your name at the top right first: the sign-off is stored with it", "bad"); $("#rater").focus(); return; }
    const chosen = $("input[name=decision]:checked");
    if (!chosen) { say("choose approve, approve with conditions or reject", "bad"); return; }
    const f = $("#sign");
    const r = await post("/api/signoffs", {rater: rater(), role: $("#role").value, decision: chosen.value, note: $("#note").value,
                                           version: f.dataset.version, night: f.dataset.night});
    if (r.status === "signed") { say(r.message); location.reload(); } else { say(r.message || "not signed", "bad"); }
  });
}
