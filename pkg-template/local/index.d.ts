import type { CustomModelRequest, CustomModelAnswer } from "../gatehouse.js";

/** The options of `model: { provider: "local", … }` (README "A model in the page"). */
export interface LocalModelOptions {
  provider: "local";
  /** The GGUF file: its URL (fetched once, then read from Cache Storage) or a Blob. */
  url: string | Blob;
  /** The file's expected SHA-256, 64 hex digits: checked before it is cached. */
  sha256?: string;
  model?: string;
  /** Tokens of context llama.cpp allocates (default 4096). */
  contextWindow?: number;
  /** Tokens per answer (default 512). */
  maxTokens?: number;
  /** Sampling temperature (default 0: the same answer every time). */
  temperature?: number;
  /** "required": the answer to each user message is a tool call, and the answer to its results
   *  is text (default "auto": the model chooses, and a small one nearly always writes text). */
  toolChoice?: "auto" | "required";
  /** Several tool calls in one answer (default false: one). */
  parallelToolCalls?: boolean;
  /** Where it runs: "auto" (default: WebGPU when the browser gives an adapter llama.cpp can
   *  use, else the CPU), "cpu", or "webgpu" (else `webgpu_unavailable`). */
  device?: "auto" | "cpu" | "webgpu";
}

/** The `custom` model that runs `options`; `Agent.open` calls this for `provider: "local"`. */
export function localModel(
  options: LocalModelOptions,
  invalid: (message: string) => Error,
): {
  provider: "custom"; model: string; contextWindow: number;
  call: (request: CustomModelRequest) => Promise<CustomModelAnswer>;
};

/** Removes a model's cached copies (every checksum), or every cached model with no argument. */
export function forgetModel(url?: string): Promise<void>;
