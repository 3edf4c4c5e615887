import { act, fireEvent, screen, within } from '@testing-library/react';

/**
 * Drives @grafana/ui's Combobox and MultiCombobox as a user does: clicks the input named
 * `label` (its field label or aria-labelledby name), waits for the menu, and clicks the option
 * whose label is `optionLabel` (its description, if any, is a separate line). Needs the
 * element sizes jest-setup.js gives jsdom: the option list is virtualised.
 */
export async function pickOption(label: string, optionLabel: string) {
  await openMenu(label);
  const option = await findOption(optionLabel);
  await act(async () => {
    fireEvent.click(option);
  });
}

/**
 * Opens the menu of the picker named `label` unless it is open (a click on the input toggles
 * it, and a multi-value menu stays open after a pick), and returns the input.
 */
export async function openMenu(label: string): Promise<HTMLElement> {
  const input = screen.getByLabelText(label);
  if (input.getAttribute('aria-expanded') !== 'true') {
    await act(async () => {
      fireEvent.click(input);
    });
  }
  return input;
}

/** The open menu's option labelled `optionLabel` (exact), waiting for the menu to render. */
export async function findOption(optionLabel: string): Promise<HTMLElement> {
  const options = await screen.findAllByRole('option');
  const found = options.find((o) => within(o).queryByText(optionLabel, { exact: true }) !== null);
  if (!found) {
    throw new Error(`no option "${optionLabel}" among ${options.map((o) => `"${o.textContent}"`).join(', ')}`);
  }
  return found;
}

/** The labels of the open menu's options (what a user sees listed), or [] when none is open. */
export function optionLabels(): string[] {
  return screen.queryAllByRole('option').map((o) => o.textContent ?? '');
}

/**
 * Types `text` into the picker named `label` and picks it: the typed value (offered as a
 * custom value) or the option that matches it.
 */
export async function typeAndPick(label: string, text: string) {
  const input = await openMenu(label);
  await act(async () => {
    fireEvent.change(input, { target: { value: text } });
  });
  const option = await findOption(text);
  await act(async () => {
    fireEvent.click(option);
  });
}
