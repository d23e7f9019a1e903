// gatehouse-agent/ui/element: importing it defines <gatehouse-chat> (unless the page already has
// an element of that name).
import type { Agent } from "../gatehouse.js";

/** Defines `<gatehouse-chat>` (or `name`) unless the page already has an element of that
 *  name; returns the class it is defined with. `gatehouse-agent/ui/element` calls it on import. */
export declare function defineGatehouseChat(name?: string): typeof GatehouseChat;

/** `<gatehouse-chat>`: attributes `thread-id`, `provider`, `base-url`, `model`, `database`,
 *  `tools` (URL of a module exporting `tools` and `suggestions`), `heading`, `instructions`. */
export declare class GatehouseChat extends HTMLElement {
  /** The open agent, or null while loading. */
  readonly agent: Agent | null;
}

declare global {
  interface HTMLElementTagNameMap {
    "gatehouse-chat": GatehouseChat;
  }
}
