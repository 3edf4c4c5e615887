export const SECTIONS: string[];
export function anchor(heading: string): string;
export function pluginReadme(readme: string): string;
