// The conversation: the library's kept chat (the engine stores every turn),
// then what is asked now.
import { commands, type Answer, type ChatTurn } from "../bindings";
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

  /** The library changed: its chat is another one. */
  forget() {
    this.turns = [];
    this.loaded = false;
  }

  async send(chips: Chip[], text: string) {
    const message = [...chips.map((c) => c.token), text.trim()].filter(Boolean).join(" ");
    if (!message) return;
    const turn: Turn = { id: this.next--, chips, text: text.trim(), answer: null, error: null, pending: true };
    this.turns.push(turn);
    const t = this.turns[this.turns.length - 1]!;
    try {
      t.answer = await call(commands.ask(message));
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
  return { id: k.id, chips, text, answer, error, pending: false };
}

export const chat = new ChatState();
