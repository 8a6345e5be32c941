// production monitoring's review queue (/monitor): a verdict a row, from the keyboard; a reviewed incident becomes a case
(() => {
  const el = (s) => document.querySelector(s);
  const all = (s) => Array.from(document.querySelectorAll(s));
  const inc = el("#incident");
  const day = el("#monitor-day");
  if (day) day.addEventListener("change", () => { location.href = "/monitor?day=" + encodeURIComponent(day.value); });
  if (!inc) return;
  const rater = () => (el("#rater").value || "").trim();
  const tell = (msg, kind) => { const s = el("#status"); s.textContent = msg; s.className = kind || "ok"; };
  const go = (id, what) => { if (!id) { tell(what); return; }
    location.href = "/monitor/case?day=" + encodeURIComponent(inc.dataset.day) + "&request=" + encodeURIComponent(id); };
  async function send(url, body) {
    const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    return r.json();
  }
  async function verdict(v) {
    if (!rater()) { tell("type your rater name at the top right first", "bad"); el("#rater").focus(); return; }
    const chosen = el("button.difficulty.chosen");
    const r = await send("/api/incidents", {rater: rater(), day: inc.dataset.day, request_id: inc.dataset.request, verdict: v,
      expected_behavior: el("#expected").value, reference_answer: el("#inc-reference").value, query: el("#inc-query").value,
      difficulty: chosen ? chosen.dataset.value : "medium", scoring_notes: el("#inc-notes").value});
    if (r.status !== "saved") { tell(r.message, "bad"); return; }
    tell(inc.dataset.request + ": " + v + " saved");
    go(inc.dataset.next, "saved: that was the last row left to review");
  }
  el("#incident-yes").addEventListener("click", () => verdict("incident"));
  el("#incident-no").addEventListener("click", () => verdict("not_a_failure"));
  all("button.difficulty").forEach(b => b.addEventListener("click", () => { all("button.difficulty").forEach(x => x.classList.remove("chosen")); b.classList.add("chosen"); }));
  el("#freeze-incidents").addEventListener("click", async () => {
    const r = await send("/api/incidents/freeze", {rater: rater(), base_version: el("#base-version").value, new_version: el("#new-version").value});
    el("#freeze-out").textContent = r.status === "frozen" ? "frozen: " + r.version + " (" + r.n_cases + " cases)" : r.message + (r.problems ? "\n" + r.problems.join("\n") : "");
    tell(r.status === "frozen" ? "version " + r.version + " frozen" : r.message, r.status === "frozen" ? "ok" : "bad");
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select")) {
      if (e.key === "Escape") { e.preventDefault(); e.target.blur(); }
      else if (e.key === "Enter" && !e.shiftKey && e.target.id === "inc-reference") { e.preventDefault(); verdict("incident"); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "i") { e.preventDefault(); el("#inc-reference").focus(); }
    else if (e.key === "n") { e.preventDefault(); verdict("not_a_failure"); }
    else if (/^[123]$/.test(e.key)) { e.preventDefault(); all("button.difficulty")[Number(e.key) - 1].click(); }
    else if (e.key === "j" || e.key === "ArrowRight") go(inc.dataset.nextAny, "this is the last row");
    else if (e.key === "k" || e.key === "ArrowLeft") go(inc.dataset.prev, "this is the first row");
  });
})();
