// mcec console: the few things the server-rendered pages need a script for. No framework.
// - a region with data-refresh is fetched again every 2 s and replaced (the runs list; a run's live
//   part while it is not over: data-live="1"), keeping the selected effect;
// - clicking an effect of a timeline shows the state after it and highlights its line of the source;
// - a list field's "add"/"remove" buttons; a JSON field is checked before the form is sent;
// - a deadline's time left counts down.
"use strict";

const REFRESH_MS = 2000;
let selectedKey = null;

function refresh(region) {
  const url = region.dataset.refresh;
  const again = () => {
    if (region.dataset.live === "0") return;
    fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        region.innerHTML = html;
        const status = region.querySelector("#run-status");
        if (status && ["finished", "failed", "cancelled", "stopped"].includes(status.textContent.trim())) {
          region.dataset.live = "0";
        }
        reselect();
      })
      .catch(() => {})
      .finally(() => setTimeout(again, REFRESH_MS));
  };
  setTimeout(again, REFRESH_MS);
}

function select(row) {
  document.querySelectorAll("tr.row.selected").forEach((r) => r.classList.remove("selected"));
  row.classList.add("selected");
  selectedKey = row.dataset.key || null;
  const live = document.getElementById("live");
  const shown = document.getElementById("state");
  const of = document.getElementById("state-of");
  if (live && shown && row.dataset.key !== undefined && row.classList.contains("has-state")) {
    const key = row.dataset.key;
    const url = "/runs/" + encodeURIComponent(live.dataset.run) + "/state?key=" + encodeURIComponent(key);
    fetch(url, { credentials: "same-origin" })
      .then((r) => r.text())
      .then((text) => {
        if (selectedKey !== key) return; // another effect was clicked meanwhile
        shown.textContent = text;
        if (of) of.textContent = "effect " + key;
      });
  }
  document.querySelectorAll("ol.source li.highlight").forEach((li) => li.classList.remove("highlight"));
  const line = row.dataset.line;
  if (line) {
    const li = document.getElementById("L" + line);
    if (li) {
      li.classList.add("highlight");
      li.scrollIntoView({ block: "nearest" });
    }
  }
}

function reselect() {
  if (selectedKey === null) return;
  const row = document.querySelector('tr.row[data-key="' + CSS.escape(selectedKey) + '"]');
  if (row) select(row);
}

document.addEventListener("click", (event) => {
  const target = event.target;
  if (!(target instanceof Element)) return;
  const row = target.closest("tr.row");
  if (row && !target.closest("a")) {
    select(row);
    return;
  }
  if (target.matches("button.add")) {
    const list = target.closest("fieldset.list");
    const template = list.querySelector(":scope > template");
    const items = list.querySelector(":scope > ol.items");
    const name = list.dataset.list;
    let next = 0;
    items.querySelectorAll(":scope > li > input[type=hidden]").forEach((marker) => {
      const n = parseInt(marker.name.slice(name.length + 1), 10);
      if (!Number.isNaN(n) && n >= next) next = n + 1;
    });
    const html = template.innerHTML.split(name + ".__i__").join(name + "." + next);
    items.insertAdjacentHTML("beforeend", html);
  } else if (target.matches("button.remove")) {
    target.closest("li").remove();
  }
});

document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.key === "Enter" && target instanceof Element && target.matches("tr.row")) select(target);
});

document.addEventListener("submit", (event) => {
  const form = event.target;
  let ok = true;
  form.querySelectorAll("textarea.json").forEach((area) => {
    area.setCustomValidity("");
    if (area.value.trim() === "") return;
    try {
      JSON.parse(area.value);
    } catch (e) {
      area.setCustomValidity("not JSON: " + e.message);
      ok = false;
    }
  });
  if (!ok) {
    event.preventDefault();
    form.reportValidity();
  }
});

function countdown() {
  document.querySelectorAll("[data-deadline] .left").forEach((span) => {
    const left = (Date.parse(span.parentElement.dataset.deadline) - Date.now()) / 1000;
    if (left <= 0) {
      span.textContent = "expired";
      span.parentElement.classList.add("expired");
      return;
    }
    const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600), m = Math.floor((left % 3600) / 60);
    const s = Math.floor(left % 60);
    span.textContent = (d ? d + " d " : "") + (h ? h + " h " : "") + (m ? m + " min " : "") + s + " s left";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-refresh]").forEach(refresh);
  if (document.querySelector("[data-deadline] .left")) setInterval(countdown, 1000);
  if (location.hash.startsWith("#L")) {
    const li = document.getElementById(location.hash.slice(1));
    if (li) li.classList.add("highlight");
  }
});
window.addEventListener("hashchange", () => {
  document.querySelectorAll("ol.source li.highlight").forEach((li) => li.classList.remove("highlight"));
  const li = document.getElementById(location.hash.slice(1));
  if (li) li.classList.add("highlight");
});
