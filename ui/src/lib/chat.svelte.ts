// The conversation: the library's kept chat (the engine stores every turn),
// then what is asked now.
import { Channel } from "@tauri-apps/api/core";
import { commands, type Answer, type AnswerEvent, type ChatTurn, type Passage, type QuotedLine, type Statement } from "../bindings";
import { call, errorText } from "./api";

export interface Chip {
  doc: number;
  title: string;
  token: string;
}

export interface Turn {
  id: number;
  chips: Chip[];
  text: string;
  answer: Answer | null;
  error: string | null;
  pending: boolean;
  /** What has come while the answer is written. */
  live: Live;
}

/** An answer as it is being written: the checked line, the passages (at
 * once), the text so far and each statement with its mark as it ends. */
export interface Live {
  quote: QuotedLine | null;
  passages: Passage[];
  text: string;
  statements: Statement[];
  stopping: boolean;
}

function noLive(): Live {
  return { quote: null, passages: [], text: "", statements: [], stopping: false };
}

class ChatState {
  turns = $state<Turn[]>([]);
  loaded = $state(false);
  loadError = $state<string | null>(null);
  /** Turns asked now count down from -1: kept turns have the positive ids. */
  private next = -1;

  /** Loads the library's kept chat, once (again after `forget`). */
  async load() {
    if (this.loaded) return;
    try {
      const kept = await call(commands.chatHistory());
      // A question sent while this loaded stays after the kept ones.
      this.turns = [...kept.map(restore), ...this.turns];
      this.loadError = null;
    } catch (e) {
      this.loadError = errorText(e);
    } finally {
      this.loaded = true;
    }
  }

  /** Forgets the library's chat; the engine deletes the kept turns. */
  async clear() {
    await call(commands.clearChat());
    this.turns = [];
  }

  /** Stops the answer being written; what was written is kept. */
  async stop(t: Turn) {
    t.live.stopping = true;
    await call(commands.stopAnswer());
  }

  /** The library changed: its chat is another one. */
  forget() {
    this.turns = [];
    this.loaded = false;
  }

  async send(chips: Chip[], text: string) {
    const message = [...chips.map((c) => c.token), text.trim()].filter(Boolean).join(" ");
    if (!message) return;
    const turn: Turn = { id: this.next--, chips, text: text.trim(), answer: null, error: null, pending: true, live: noLive() };
    this.turns.push(turn);
    const t = this.turns[this.turns.length - 1]!;
    const channel = new Channel<AnswerEvent>();
    channel.onmessage = (e) => {
      switch (e.kind) {
        case "quote":
          t.live.quote = e.quote;
          break;
        case "context":
          t.live.passages = e.passages;
          break;
        case "text":
          t.live.text += e.text;
          break;
        case "statement":
          t.live.statements.push(e.statement);
          break;
      }
    };
    try {
      t.answer = await call(commands.ask(message, channel));
    } catch (e) {
      t.error = errorText(e);
    } finally {
      t.pending = false;
    }
  }
}

/** A kept turn as the page shows it: mentions as chips, the rest as text. */
function restore(k: ChatTurn): Turn {
  const answer: Answer | null = k.reply.kind === "answer" ? k.reply.answer : null;
  const chips = (answer?.mentions ?? []).map((m) => ({ doc: m.doc, title: m.title, token: m.token }));
  const text = chips.reduce((rest, c) => rest.replace(c.token, ""), k.message).trim();
  const error = k.reply.kind === "error" ? k.reply.message : k.reply.kind === "unreadable" ? k.reply.reason : null;
  return { id: k.id, chips, text, answer, error, pending: false, live: noLive() };
}

export const chat = new ChatState();
