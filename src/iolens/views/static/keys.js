"use strict";
/* Keyboard on the focused timeline: arrows pan (left/right: time, up/down: ranks), + and - zoom time at the
   middle of the window, 0 or Escape reset. Clicking the timeline focuses it. */

const PAN_SHARE = 0.2;  // of the visible window per key press

function bindTimelineKeys(app, container) {
  container.addEventListener("mousedown", () => container.focus({preventScroll: true}));
  container.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const v = app.view, dt = (v.t1 - v.t0) * PAN_SHARE;
    const dr = Math.max(1, Math.round((v.r1 - v.r0) * PAN_SHARE));
    switch (e.key) {
      case "ArrowLeft": app.setView({t0: v.t0 - dt, t1: v.t1 - dt}); break;
      case "ArrowRight": app.setView({t0: v.t0 + dt, t1: v.t1 + dt}); break;
      case "ArrowUp": app.setView({r0: v.r0 - dr, r1: v.r1 - dr}); break;
      case "ArrowDown": app.setView({r0: v.r0 + dr, r1: v.r1 + dr}); break;
      case "+": case "=": app.zoomTime((v.t0 + v.t1) / 2, 0.5); break;
      case "-": case "_": app.zoomTime((v.t0 + v.t1) / 2, 2); break;
      case "0": case "Escape": app.reset(); break;
      default: return;
    }
    e.preventDefault();
  });
}
