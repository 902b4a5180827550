// The conversation, kept while the user opens cited documents and comes back.
import { commands, type Answer } from "../bindings";
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
  private next = 1;

  async send(chips: Chip[], text: string) {
    const message = [...chips.map((c) => c.token), text.trim()].filter(Boolean).join(" ");
    if (!message) return;
    const turn: Turn = { id: this.next++, chips, text: text.trim(), answer: null, error: null, pending: true };
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

export const chat = new ChatState();
