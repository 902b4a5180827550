// Light, dark, or follow the system; remembered per machine.
export type Theme = "system" | "light" | "dark";
const KEY = "carrel-theme";

export function loadTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === "light" || t === "dark" ? t : "system";
}

export function applyTheme(t: Theme) {
  localStorage.setItem(KEY, t);
  if (t === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}
