import init, { Agent } from "gatehouse-agent";
import { runApp } from "./app.js";
runApp(init, Agent);
