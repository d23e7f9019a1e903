import init, { Agent } from "gatehouse";
import { runApp } from "./app.js";
runApp(init, Agent);
