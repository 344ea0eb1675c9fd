// Packages that ship no type declarations: only what the engines use.

declare module "stopword" {
  export const eng: string[];
  export const rus: string[];
}

declare module "@nlpjs/core" {
  export class Container {
    use(plugin: unknown): void;
  }
}

declare module "@nlpjs/lang-ru" {
  export const LangRu: unknown;
}

declare module "@nlpjs/sentiment" {
  import type { Container } from "@nlpjs/core";
  export interface NlpjsSentiment {
    score: number;
    numWords: number;
    numHits: number;
    average: number;
    type: string;
    locale: string;
    vote: "positive" | "negative" | "neutral";
  }
  export class SentimentAnalyzer {
    constructor(settings: { container: Container });
    process(input: { locale: string; text: string }): Promise<{ sentiment: NlpjsSentiment }>;
  }
}
