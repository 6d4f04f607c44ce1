//! `#[toolwire::tool]`: a typed tool from a plain function. Use it through `toolwire`
//! (`toolwire::tool`, feature `tools`), which documents it with examples; this crate holds only
//! the macro, because a procedural macro must live in a crate of its own.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, ItemFn, Lit, LitStr, Meta, Pat,
    PathArguments, ReturnType, Type, parse_macro_input,
};

/// Makes a typed tool of an `async fn` (or a plain `fn`): the function stays as written, and a
/// unit struct named after it in CamelCase implements `toolwire::tools::TypedTool`.
///
/// The tool's name is the function's, its description the function's doc comment, and its
/// parameters schema is derived from the argument types (each argument's doc comment becomes
/// its description). `#[tool(name = "...", description = "...")]` overrides either. The
/// function returns `Result<T, E>` with `T: Serialize` and `E: Into<ToolError>`, or any
/// `T: Serialize`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut settings = Settings::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            settings.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("description") {
            settings.description = Some(meta.value()?.parse()?);
            Ok(())
        } else {
            Err(meta.error(
                "unknown setting: #[tool] takes `name = \"...\"` and `description = \"...\"`",
            ))
        }
    });
    parse_macro_input!(attr with parser);
    let function = parse_macro_input!(item as ItemFn);
    match expand(settings, function) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

#[derive(Default)]
struct Settings {
    name: Option<LitStr>,
    description: Option<LitStr>,
}

fn expand(settings: Settings, mut function: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &function.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[tool] function cannot be generic: its argument types make the schema the model sees",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "a #[tool] function cannot be variadic",
        ));
    }

    let fn_ident = sig.ident.clone();
    let name = match settings.name {
        Some(name) => name.value(),
        None => fn_ident.to_string().trim_start_matches("r#").to_owned(),
    };
    let description = match settings.description {
        Some(description) => description.value(),
        None => doc_text(&function.attrs),
    };
    if description.is_empty() {
        return Err(syn::Error::new(
            fn_ident.span(),
            "a #[tool] function needs a doc comment (or `#[tool(description = \"...\")]`): it is the tool's description for the model",
        ));
    }

    let mut fields = Vec::new();
    let mut field_idents = Vec::new();
    for input in function.sig.inputs.iter_mut() {
        let FnArg::Typed(arg) = input else {
            return Err(syn::Error::new(
                input.span(),
                "a #[tool] function is a free function: `self` has no place in the tool's arguments",
            ));
        };
        let Pat::Ident(pat) = &*arg.pat else {
            return Err(syn::Error::new(
                arg.pat.span(),
                "each argument of a #[tool] function is a plain name (`city: String`): the name is the parameter the model fills",
            ));
        };
        if pat.by_ref.is_some() || pat.subpat.is_some() {
            return Err(syn::Error::new(
                pat.span(),
                "each argument of a #[tool] function is a plain name (`city: String`)",
            ));
        }
        if let Type::Reference(reference) = &*arg.ty {
            return Err(syn::Error::new(
                reference.span(),
                "a #[tool] argument is an owned value (`String`, not `&str`): it is deserialized from the model's arguments",
            ));
        }
        // Doc comments describe the parameter in the schema; they cannot stay on the function.
        let (docs, others): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut arg.attrs)
            .into_iter()
            .partition(|a| a.path().is_ident("doc"));
        arg.attrs = others;
        let ident = &pat.ident;
        let ty = &arg.ty;
        fields.push(quote! { #(#docs)* pub #ident: #ty });
        field_idents.push(ident.clone());
    }

    let (output, fallible) = output_type(&function.sig.output)?;
    let vis = &function.vis;
    let fn_name = fn_ident.to_string();
    let struct_ident = format_ident!(
        "{}",
        camel_case(fn_name.trim_start_matches("r#")),
        span = fn_ident.span()
    );
    let args_ident = format_ident!("{}Args", struct_ident);
    let awaited = if function.sig.asyncness.is_some() {
        quote! { .await }
    } else {
        quote! {}
    };
    let result = if fallible {
        quote_spanned! {function.sig.output.span()=>
            ::core::result::Result::map_err(
                #fn_ident(#(args.#field_idents),*)#awaited,
                ::core::convert::Into::<::toolwire::tools::ToolError>::into,
            )
        }
    } else {
        quote! { ::core::result::Result::Ok(#fn_ident(#(args.#field_idents),*)#awaited) }
    };
    let struct_doc = format!(
        "The tool `{name}`, made by `#[toolwire::tool]` from [`{fn_ident}`]: `Tool::typed({struct_ident})`."
    );

    Ok(quote! {
        #function

        #[doc = #struct_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #struct_ident;

        #[doc(hidden)]
        #[allow(missing_docs)]
        #[derive(::toolwire::__private::serde::Deserialize, ::toolwire::__private::schemars::JsonSchema)]
        #[serde(crate = "::toolwire::__private::serde")]
        #[schemars(crate = "::toolwire::__private::schemars")]
        #vis struct #args_ident {
            #(#fields,)*
        }

        impl ::toolwire::tools::TypedTool for #struct_ident {
            type Args = #args_ident;
            type Output = #output;

            fn name(&self) -> &str {
                #name
            }

            fn description(&self) -> &str {
                #description
            }

            fn call(
                &self,
                args: #args_ident,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<Self::Output, ::toolwire::tools::ToolError>,
            > + ::core::marker::Send {
                async move { #result }
            }
        }
    })
}

/// The doc comment's text: lines trimmed, joined with newlines, blank ends dropped.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// `(T, true)` for `Result<T, E>`, `(T, false)` for any other `T` (`()` when nothing is
/// returned).
fn output_type(output: &ReturnType) -> syn::Result<(Type, bool)> {
    let ty = match output {
        ReturnType::Default => return Ok((syn::parse_quote!(()), false)),
        ReturnType::Type(_, ty) => ty,
    };
    if let Type::Path(path) = &**ty
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
    {
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return Err(result_arity(ty.span()));
        };
        let types: Vec<&Type> = args
            .args
            .iter()
            .filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        return match types.as_slice() {
            [ok, _err] => Ok(((*ok).clone(), true)),
            _ => Err(result_arity(ty.span())),
        };
    }
    Ok(((**ty).clone(), false))
}

fn result_arity(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "a #[tool] function returns `Result<T, E>` with both types written out (E: Into<ToolError>), or a plain value",
    )
}

/// `get_weather` → `GetWeather`; characters other than letters and digits separate words.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}
