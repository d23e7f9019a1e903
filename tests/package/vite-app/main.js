import init, { Agent } from "gatehouse-agent";
// Importing the ui kit has no side effect: it defines no element and brings no stylesheet
// (run.mjs checks the page and the build's assets).
import { isSuspended } from "gatehouse-agent/ui";
import { runApp } from "./app.js";
document.body.dataset.element = String(!!customElements.get("gatehouse-chat"));
document.body.dataset.suspended = String(isSuspended(null));
runApp(init, Agent);
